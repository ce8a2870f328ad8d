// Group commit of the Postgres session store (group-commit.ts) on real Postgres: writes of several
// sessions that arrive while a statement is in flight share the next one, and each of them still
// gets exactly the answer it would get alone (architecture §2.3: a fenced-out write fails alone and
// writes nothing; the others commit). The whole SessionStore contract also runs with every write
// forced into a statement shared with another session's write.
import { newMsg, txOf } from '@gonka-gateway/devshard';
import {
  isSessionStoreError,
  type SessionRecord,
  type SessionStore,
  type SessionWrites,
  type StoredDiff,
} from '@gonka-gateway/devshard/session';
import { sessionStoreContract } from '@gonka-gateway/devshard/testing';
import { type Database, openDatabase } from '@gonka-gateway/shared';
import { createTestDatabase, type TestDatabase } from '@gonka-gateway/shared/testing';
import postgres, { type Sql } from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresSessionStore } from './postgres-session-store.js';

let database: TestDatabase;
let appDatabase: TestDatabase;
let sql: Sql<Record<string, never>>;
let app: Database;
/** Statement texts sent on `sql`, in order (postgres.js debug hook). */
const sent: string[] = [];
let store: PostgresSessionStore;
let appStore: PostgresSessionStore;

beforeAll(async () => {
  [database, appDatabase] = await Promise.all([createTestDatabase(), createTestDatabase()]);
  sql = postgres(database.url, {
    max: 16,
    onnotice: () => {},
    debug: (_connection, query) => {
      sent.push(query);
    },
  });
  store = new PostgresSessionStore(sql);
  app = openDatabase(appDatabase.url, { max: 16 });
  appStore = new PostgresSessionStore(app.sql);
});

afterAll(async () => {
  await sql?.end({ timeout: 5 });
  await app?.close();
  await Promise.all([database?.drop(), appDatabase?.drop()]);
});

/** A session record like the contract's (store-contract.ts). */
const contractRecord = (escrowId: string): SessionRecord => ({
  escrowId,
  escrow: {
    escrowId: BigInt(escrowId),
    creator: 'gonka1creator',
    amount: 10_000_000n,
    slots: ['gonka1a', 'gonka1b', 'gonka1a'],
    tokenPrice: 2n,
    feePerNonce: 1_000n,
  },
  tag: 'v5',
  version: 'v5',
  chainParams: { refusalTimeout: 60n, executionTimeout: 1_920n },
});

/** A diff at `nonce` like the contract's; `variant` changes the signature (another signed diff). */
function contractDiff(nonce: bigint, withPayload = false, variant = 0): StoredDiff {
  const confirm = txOf.confirmStart(
    newMsg.confirmStart({ inferenceId: nonce, executorSig: new Uint8Array(65).fill(7), confirmedAt: 99n }),
  );
  return {
    nonce,
    diff: {
      nonce,
      txs: [confirm, txOf.finalizeRound()],
      userSig: new Uint8Array(65).fill(Number(nonce % 250n) + 1).fill(variant, 0, variant > 0 ? 4 : 0),
      postStateRoot: nonce % 2n === 0n ? new Uint8Array(32).fill(3) : new Uint8Array(0),
    },
    root: new Uint8Array(32).fill(Number(nonce % 250n)),
    warmKeysBound: nonce === 1n ? [{ slot: 1, coldAddress: 'gonka1b', address: 'gonka1warm' }] : [],
    ...(withPayload
      ? {
          payload: {
            prompt: new TextEncoder().encode(`{"messages":[],"n":${nonce}}`),
            model: 'm',
            inputLength: 12n,
            maxTokens: 64n,
            startedAt: 1_700_000_000n,
          },
        }
      : {}),
  };
}

let seq = 0;
const base = BigInt(Date.now()) * 1000n + 500n;
const nextId = () => String(base + BigInt(++seq));

async function owned(s: SessionStore, n: number): Promise<{ id: string; token: bigint }[]> {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const id = nextId();
      await s.create(contractRecord(id));
      const { fencingToken } = await s.acquire(id);
      return { id, token: fencingToken };
    }),
  );
}

const count = (pattern: RegExp) => sent.filter((q) => pattern.test(q)).length;
const DIFF_INSERT = /insert into session_diffs/;

const settle = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );

const codeOf = (r: { ok: boolean; error?: unknown }) =>
  r.ok ? 'ok' : isSessionStoreError(r.error) ? r.error.code : 'driver';

describe.each([
  ['a postgres.js pool', () => store],
  ['the openDatabase() handle', () => appStore],
])('group commit on %s', (_name, current) => {
  it('carries k concurrent write-aheads in one statement after the one in flight', async () => {
    const s = current();
    const sessions = await owned(s, 9);
    const before = count(DIFF_INSERT);
    const writes = (i: number): SessionWrites => ({
      addPending: [{ key: `tx:${i}`, bytes: Uint8Array.of(i, 1) }],
      hostProgress: [{ address: 'gonka1a', nonce: BigInt(i) }],
      signatures: [{ nonce: 1n, signatures: [{ slotId: i % 3, signature: Uint8Array.of(i) }] }],
    });
    // Submitted in one tick: the first goes at once and alone, the other 8 wait for it, together.
    await Promise.all(
      sessions.map(({ id, token }, i) => s.appendDiff(id, contractDiff(1n, i % 2 === 0), token, writes(i))),
    );
    if (s === store) expect(count(DIFF_INSERT) - before).toBe(2);
    for (const [i, { id }] of sessions.entries()) {
      const loaded = await s.load(id);
      expect(loaded?.lastNonce).toBe(1n);
      expect(loaded?.diffs.map((d) => d.nonce)).toEqual([1n]);
      expect(Buffer.from(loaded!.diffs[0]!.diff.userSig)).toEqual(Buffer.from(contractDiff(1n).diff.userSig));
      expect(loaded?.diffs[0]?.warmKeysBound).toEqual(contractDiff(1n).warmKeysBound);
      expect([...(loaded?.payloads.keys() ?? [])]).toEqual(i % 2 === 0 ? [1n] : []);
      expect(loaded?.pendingTxs.map((p) => [p.key, [...p.bytes]])).toEqual([[`tx:${i}`, [i, 1]]]);
      expect(loaded?.hostSync.get('gonka1a')).toBe(BigInt(i));
      expect([...(await s.loadSignatures(id, 1n))]).toEqual([[i % 3, Uint8Array.of(i)]]);
    }
  });

  it('fails a fenced-out write-ahead alone: its rows are not written, the others commit', async () => {
    const s = current();
    const sessions = await owned(s, 5);
    // A newer owner takes the third escrow: its old token is stale.
    const fenced = sessions[2]!;
    await s.acquire(fenced.id);
    const carried: SessionWrites = {
      addPending: [{ key: 'x', bytes: Uint8Array.of(1) }],
      hostProgress: [{ address: 'gonka1a', nonce: 5n }],
    };
    const results = await Promise.all(
      sessions.map(({ id, token }) => settle(s.appendDiff(id, contractDiff(1n, true), token, carried))),
    );
    expect(results.map(codeOf)).toEqual(['ok', 'ok', 'stale_token', 'ok', 'ok']);
    for (const { id } of sessions) {
      const loaded = await s.load(id);
      const mine = id !== fenced.id;
      expect(loaded?.lastNonce).toBe(mine ? 1n : 0n);
      expect(loaded?.diffs.length).toBe(mine ? 1 : 0);
      expect(loaded?.payloads.size).toBe(mine ? 1 : 0);
      expect(loaded?.pendingTxs.length).toBe(mine ? 1 : 0);
      expect(loaded?.hostSync.size).toBe(mine ? 1 : 0);
    }
  });

  it('answers each write of a statement as it would be answered alone', async () => {
    const s = current();
    const sessions = await owned(s, 5);
    // Every escrow holds nonce 1 first.
    await Promise.all(sessions.map(({ id, token }) => s.appendDiff(id, contractDiff(1n), token)));
    const other: StoredDiff = contractDiff(1n, false, 9);
    const attempts: [number, StoredDiff][] = [
      [0, contractDiff(2n)], // next: applied
      [1, contractDiff(1n)], // identical retry of a stored diff: a no-op success
      [2, other], // another diff at a taken nonce: nonce_conflict
      [3, contractDiff(5n)], // a gap: nonce_conflict
      [4, contractDiff(2n, true)], // next, with a payload
    ];
    const results = await Promise.all(
      attempts.map(([i, d]) => settle(s.appendDiff(sessions[i]!.id, d, sessions[i]!.token))),
    );
    expect(results.map(codeOf)).toEqual(['ok', 'ok', 'nonce_conflict', 'nonce_conflict', 'ok']);
    const last = await Promise.all(sessions.map(({ id }) => s.load(id).then((l) => l?.lastNonce)));
    expect(last).toEqual([2n, 1n, 1n, 1n, 2n]);
    const kept = await s.load(sessions[2]!.id);
    expect(Buffer.from(kept!.diffs[0]!.diff.userSig)).toEqual(Buffer.from(contractDiff(1n).diff.userSig));
  });

  it('repeats each write alone when Postgres refuses the shared statement, so only the bad one fails', async () => {
    const s = current();
    const sessions = await owned(s, 3);
    const before = count(DIFF_INSERT);
    // Not a number: the cast fails the whole shared statement; repeated alone, only it fails.
    const results = await Promise.all([
      settle(s.appendDiff(sessions[0]!.id, contractDiff(1n), sessions[0]!.token)),
      settle(s.appendDiff(sessions[1]!.id, contractDiff(1n), sessions[1]!.token)),
      settle(s.appendDiff('not-a-number', contractDiff(1n), 1n)),
      settle(s.appendDiff(sessions[2]!.id, contractDiff(1n), sessions[2]!.token)),
    ]);
    expect(results.map((r) => r.ok)).toEqual([true, true, false, true]);
    if (s === store) expect(count(DIFF_INSERT) - before).toBe(2 + 3); // alone, shared, 3 repeated
    const last = await Promise.all(sessions.map(({ id }) => s.load(id).then((l) => l?.lastNonce)));
    expect(last).toEqual([1n, 1n, 1n]);
  });

  it('carries k concurrent saveWrites in one statement; a stale one fails alone', async () => {
    const s = current();
    const sessions = await owned(s, 7);
    await Promise.all(
      sessions.map(({ id, token }) =>
        s.saveWrites(id, { addPending: [{ key: 'gone', bytes: Uint8Array.of(0) }] }, token),
      ),
    );
    const fenced = sessions[4]!;
    await s.acquire(fenced.id);
    const before = sent.length;
    const results = await Promise.all(
      sessions.map(({ id, token }, i) =>
        settle(
          s.saveWrites(
            id,
            {
              addPending: [
                { key: `a:${i}`, bytes: Uint8Array.of(i) },
                { key: 'both', bytes: Uint8Array.of(9) },
              ],
              deletePending: ['gone', 'both'],
              hostProgress: [
                { address: 'gonka1a', nonce: BigInt(i + 1) },
                { address: 'gonka1a', nonce: 1n },
              ],
              signatures: [{ nonce: 3n, signatures: [{ slotId: 0, signature: Uint8Array.of(i) }] }],
            },
            token,
          ),
        ),
      ),
    );
    expect(results.map(codeOf)).toEqual(['ok', 'ok', 'ok', 'ok', 'stale_token', 'ok', 'ok']);
    if (s === store) {
      // The one alone, the six together, and the stale one's question (begin, lock, rollback).
      const writes = sent.slice(before).filter((q) => /insert into session_host_progress/.test(q));
      expect(writes.length).toBe(2);
    }
    for (const [i, { id }] of sessions.entries()) {
      const loaded = await s.load(id);
      if (id === fenced.id) {
        expect(loaded?.pendingTxs.map((p) => p.key)).toEqual(['gone']);
        expect(loaded?.hostSync.size).toBe(0);
        expect((await s.loadSignatures(id, 3n)).size).toBe(0);
        continue;
      }
      expect(loaded?.pendingTxs.map((p) => p.key)).toEqual([`a:${i}`]);
      expect(loaded?.hostSync.get('gonka1a')).toBe(BigInt(i + 1));
      expect([...(await s.loadSignatures(id, 3n))]).toEqual([[0, Uint8Array.of(i)]]);
    }
  });

  it('re-checks the token of a row a newer owner held locked while the statement waited for it', async () => {
    const s = current();
    const handle = s === store ? sql : app.sql;
    const sessions = await owned(s, 4);
    const taken = sessions[1]!;
    await Promise.all(
      sessions.map(({ id, token }) =>
        s.saveWrites(id, { hostProgress: [{ address: 'gonka1a', nonce: 1n }] }, token),
      ),
    );
    // A newer owner's acquire: the token bump holds the head row's lock until it commits.
    let locked!: () => void;
    const bumped = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const acquire = handle.begin(async (tx) => {
      await tx`update session_heads set fencing_token = fencing_token + 1 where escrow_id = ${taken.id}::numeric`;
      locked();
      await new Promise((resolve) => setTimeout(resolve, 300));
    });
    await bumped;
    const appends = Promise.all(
      sessions.map(({ id, token }) => settle(s.appendDiff(id, contractDiff(1n), token))),
    );
    const saves = Promise.all(
      sessions.map(({ id, token }) =>
        settle(s.saveWrites(id, { hostProgress: [{ address: 'gonka1a', nonce: 7n }] }, token)),
      ),
    );
    await acquire;
    expect((await appends).map(codeOf)).toEqual(['ok', 'stale_token', 'ok', 'ok']);
    expect((await saves).map(codeOf)).toEqual(['ok', 'stale_token', 'ok', 'ok']);
    for (const { id } of sessions) {
      const loaded = await s.load(id);
      const mine = id !== taken.id;
      expect(loaded?.lastNonce).toBe(mine ? 1n : 0n);
      expect(loaded?.hostSync.get('gonka1a')).toBe(mine ? 7n : 1n);
    }
  });

  it('keeps one escrow’s writes in their order, one per statement', async () => {
    const s = current();
    const [a, b] = await owned(s, 2);
    // Nonces 1…6 of one escrow submitted at once, interleaved with another's: each lands in order.
    const results = await Promise.all(
      [1n, 2n, 3n, 4n, 5n, 6n].flatMap((n) => [
        settle(s.appendDiff(a!.id, contractDiff(n), a!.token)),
        settle(s.appendDiff(b!.id, contractDiff(n), b!.token)),
      ]),
    );
    expect(results.every((r) => r.ok)).toBe(true);
    expect((await s.load(a!.id))?.diffs.map((d) => d.nonce)).toEqual([1n, 2n, 3n, 4n, 5n, 6n]);
    expect((await s.load(b!.id))?.diffs.map((d) => d.nonce)).toEqual([1n, 2n, 3n, 4n, 5n, 6n]);
  });
});

/**
 * Every write of the contract shares its statement with another session's: a write to an escrow
 * that does not exist goes first (in flight alone), then one to another such escrow and the real
 * one, which therefore go together. The companions fail `not_found` alone and write nothing.
 */
function sharing(inner: PostgresSessionStore): SessionStore {
  const ghost = () => String(900_000_000_000n + BigInt(++seq));
  const quiet = (p: Promise<unknown>) => void p.catch(() => undefined);
  return {
    create: (r) => inner.create(r),
    load: (id) => inner.load(id),
    acquire: (id) => inner.acquire(id),
    readDiffs: (id, from, to) => inner.readDiffs(id, from, to),
    saveSnapshot: (id, snap, token) => inner.saveSnapshot(id, snap, token),
    loadSignatures: (id, nonce) => inner.loadSignatures(id, nonce),
    saveFinalizeDocument: (id, json, token) => inner.saveFinalizeDocument(id, json, token),
    appendDiff: (id, diff, token, writes) => {
      quiet(inner.appendDiff(ghost(), diff, token, writes));
      quiet(inner.appendDiff(ghost(), diff, token, writes));
      return inner.appendDiff(id, diff, token, writes);
    },
    saveWrites: (id, writes, token) => {
      quiet(inner.saveWrites(ghost(), writes, token));
      quiet(inner.saveWrites(ghost(), writes, token));
      return inner.saveWrites(id, writes, token);
    },
  };
}

sessionStoreContract('postgres, every write in a shared statement', () => sharing(store), { describe, it });
sessionStoreContract(
  'postgres on openDatabase(), every write in a shared statement',
  () => sharing(appStore),
  {
    describe,
    it,
  },
);

describe('group commit off', () => {
  it('sends every write as its own statement', async () => {
    const alone = new PostgresSessionStore(sql, { groupCommit: false });
    const sessions = await owned(alone, 4);
    const before = count(DIFF_INSERT);
    await Promise.all(sessions.map(({ id, token }) => alone.appendDiff(id, contractDiff(1n), token)));
    expect(count(DIFF_INSERT) - before).toBe(4);
  });
});
