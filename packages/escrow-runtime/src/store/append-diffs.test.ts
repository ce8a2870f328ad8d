// appendDiffs on real Postgres (SessionStore.appendDiffs; the session's pipelined write-aheads,
// devshard session/pipeline.ts): consecutive diffs in one write, all or nothing, with the same
// fencing and identical-retry rule as appendDiff, alone or sharing a group-commit statement with
// other escrows' writes (architecture §2.3).
import { newMsg, txOf } from '@gonka-gateway/devshard';
import type { SessionRecord, StoredDiff } from '@gonka-gateway/devshard/session';
import { createTestDatabase, type TestDatabase } from '@gonka-gateway/shared/testing';
import postgres, { type Sql } from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresSessionStore } from './postgres-session-store.js';

let database: TestDatabase;
let sql: Sql<Record<string, never>>;
const sent: string[] = [];
let grouped: PostgresSessionStore;
let alone: PostgresSessionStore;

beforeAll(async () => {
  database = await createTestDatabase();
  sql = postgres(database.url, {
    max: 8,
    onnotice: () => {},
    debug: (_connection, query) => {
      sent.push(query);
    },
  });
  grouped = new PostgresSessionStore(sql);
  alone = new PostgresSessionStore(sql, { groupCommit: false });
});

afterAll(async () => {
  await sql?.end({ timeout: 5 });
  await database?.drop();
});

let nextId = 6100;
const record = (escrowId: string): SessionRecord => ({
  escrowId,
  escrow: {
    escrowId: BigInt(escrowId),
    creator: 'gonka1creator',
    amount: 10_000_000n,
    slots: ['gonka1a', 'gonka1b'],
    tokenPrice: 2n,
    feePerNonce: 1_000n,
  },
  tag: 'v5',
  version: 'v5',
  chainParams: { refusalTimeout: 60n, executionTimeout: 1_920n },
});

function diffAt(nonce: bigint, withPayload = false, variant = 0): StoredDiff {
  return {
    nonce,
    diff: {
      nonce,
      txs: [
        txOf.confirmStart(
          newMsg.confirmStart({
            inferenceId: nonce,
            executorSig: new Uint8Array(65).fill(7),
            confirmedAt: 9n,
          }),
        ),
      ],
      userSig: new Uint8Array(65).fill(Number(nonce % 250n) + 1 + variant),
      postStateRoot: new Uint8Array(0),
    },
    root: new Uint8Array(32).fill(Number(nonce % 250n)),
    warmKeysBound: [],
    ...(withPayload
      ? {
          payload: {
            prompt: new TextEncoder().encode(`{"n":${nonce}}`),
            model: 'm',
            inputLength: 3n,
            maxTokens: 64n,
            startedAt: 1_700_000_000n,
          },
        }
      : {}),
  };
}

async function fresh(store: PostgresSessionStore) {
  const id = String(nextId++);
  await store.create(record(id));
  const { fencingToken } = await store.acquire(id);
  return { id, token: fencingToken };
}

const settle = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe.each([
  ['group commit on', () => grouped],
  ['group commit off', () => alone],
])('appendDiffs (%s)', (_name, storeOf) => {
  it('writes consecutive diffs, their payloads and the carried writes at once; the identical call again is a no-op', async () => {
    const store = storeOf();
    const { id, token } = await fresh(store);
    await store.appendDiff(id, diffAt(1n, true), token);
    const writes = {
      addPending: [{ key: 'confirm:9', bytes: Uint8Array.of(9) }],
      // Nonce 3 starts and the same write's later diff leaves it Pending: its payload is not kept.
      prunePayloads: [1n, 3n],
      hostProgress: [{ address: 'gonka1a', nonce: 1n }],
    };
    const run = [diffAt(2n, true), diffAt(3n, true), diffAt(4n)];
    await store.appendDiffs(id, run, token, writes);
    let loaded = (await store.load(id))!;
    expect(loaded.lastNonce).toBe(4n);
    expect(loaded.diffs.map((d) => d.nonce)).toEqual([1n, 2n, 3n, 4n]);
    expect([...loaded.payloads.keys()]).toEqual([2n]);
    expect(loaded.pendingTxs.map((p) => p.key)).toEqual(['confirm:9']);
    expect(loaded.hostSync.get('gonka1a')).toBe(1n);
    expect((await store.readDiffs(id, 2n, 4n)).map((d) => d.diff.userSig)).toEqual(
      run.map((d) => d.diff.userSig),
    );

    await store.appendDiffs(id, run, token, writes); // an ambiguous commit resolved: no-op
    loaded = (await store.load(id))!;
    expect(loaded.lastNonce).toBe(4n);
    // Another diff at a stored nonce (a second signature) is refused, and writes nothing.
    await expect(
      store.appendDiffs(id, [diffAt(4n, false, 1), diffAt(5n)], token, { deletePending: ['confirm:9'] }),
    ).rejects.toMatchObject({ code: 'nonce_conflict' });
    await expect(store.appendDiffs(id, [diffAt(6n), diffAt(7n)], token)).rejects.toMatchObject({
      code: 'nonce_conflict',
    });
    loaded = (await store.load(id))!;
    expect(loaded.lastNonce).toBe(4n);
    expect(loaded.pendingTxs.map((p) => p.key)).toEqual(['confirm:9']);
  });

  it('is fenced: a stale token writes none of the diffs', async () => {
    const store = storeOf();
    const { id, token } = await fresh(store);
    await store.acquire(id); // a newer owner
    const failure = await settle(
      store.appendDiffs(id, [diffAt(1n), diffAt(2n)], token, {
        addPending: [{ key: 'k', bytes: Uint8Array.of(1) }],
      }),
    );
    expect(failure).toMatchObject({ code: 'stale_token' });
    const loaded = (await store.load(id))!;
    expect(loaded.lastNonce).toBe(0n);
    expect(loaded.diffs).toEqual([]);
    expect(loaded.pendingTxs).toEqual([]);
  });

  it('refuses nonces that are not consecutive before touching the store', async () => {
    const store = storeOf();
    const { id, token } = await fresh(store);
    await expect(store.appendDiffs(id, [diffAt(1n), diffAt(3n)], token)).rejects.toThrow(RangeError);
    expect((await store.load(id))!.lastNonce).toBe(0n);
  });
});

describe('appendDiffs in a shared statement (group commit)', () => {
  it('shares a statement with other escrows; a fenced-out run drops out alone and writes nothing', async () => {
    const [lead, a, b, stale] = await Promise.all([1, 2, 3, 4].map(() => fresh(grouped)));
    await grouped.acquire(stale!.id);
    const before = sent.length;
    const results = await Promise.all([
      // Goes alone; the others arrive while it is in flight and share the next statement.
      settle(grouped.appendDiff(lead!.id, diffAt(1n), lead!.token)),
      settle(grouped.appendDiffs(a!.id, [diffAt(1n, true), diffAt(2n), diffAt(3n)], a!.token)),
      settle(grouped.appendDiff(b!.id, diffAt(1n), b!.token)),
      settle(grouped.appendDiffs(stale!.id, [diffAt(1n), diffAt(2n)], stale!.token)),
    ]);
    expect(results.slice(0, 3)).toEqual([undefined, undefined, undefined]);
    expect(results[3]).toMatchObject({ code: 'stale_token' });
    const shared = sent.slice(before).filter((q) => q.includes('with ordinality as i(escrow_id, nonce'));
    expect(shared.length).toBeGreaterThanOrEqual(1);
    expect((await grouped.load(a!.id))!.diffs.map((d) => d.nonce)).toEqual([1n, 2n, 3n]);
    expect([...(await grouped.load(a!.id))!.payloads.keys()]).toEqual([1n]);
    expect((await grouped.load(b!.id))!.lastNonce).toBe(1n);
    expect((await grouped.load(stale!.id))!.lastNonce).toBe(0n);
    // The next run of the same escrow, alone this time.
    await grouped.appendDiffs(a!.id, [diffAt(4n), diffAt(5n)], a!.token);
    expect((await grouped.load(a!.id))!.lastNonce).toBe(5n);
  });
});
