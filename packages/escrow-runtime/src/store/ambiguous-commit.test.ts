// A connection dropped after COMMIT causes no second signature (architecture §2 item 3): the
// append's COMMIT is applied but its reply is lost. The store must then fail with an error that is
// not a SessionStoreError (the outcome is unknown, so the caller must not treat it as refused and
// re-sign), and repeating the identical append must succeed as a no-op, while any other diff for
// that nonce (what a second signature would be) is refused.
import { txOf } from '@gonka-gateway/devshard';
import { isSessionStoreError, type SessionRecord, type StoredDiff } from '@gonka-gateway/devshard/session';
import { createTestDatabase, type TestDatabase } from '@gonka-gateway/shared/testing';
import postgres, { type Sql } from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CommitCutProxy, startCommitCutProxy } from '../testing/commit-cut-proxy.js';
import { PostgresSessionStore } from './postgres-session-store.js';

const ESCROW = '4242';

const record: SessionRecord = {
  escrowId: ESCROW,
  escrow: { escrowId: 4242n, creator: 'gonka1creator', amount: 1_000_000n, slots: ['gonka1a', 'gonka1b'] },
  tag: 'v5',
  version: 'v5',
  chainParams: {},
};

const diffAt = (nonce: bigint, sig: number): StoredDiff => ({
  nonce,
  diff: {
    nonce,
    txs: [txOf.finalizeRound()],
    userSig: new Uint8Array(65).fill(sig),
    postStateRoot: new Uint8Array(0),
  },
  root: new Uint8Array(32).fill(Number(nonce)),
  warmKeysBound: [],
});

let database: TestDatabase;
let proxy: CommitCutProxy;
let viaProxy: Sql<Record<string, never>>;
let store: PostgresSessionStore;
let direct: PostgresSessionStore;

beforeAll(async () => {
  database = await createTestDatabase();
  proxy = await startCommitCutProxy(database.url);
  viaProxy = postgres(proxy.url, { max: 1, onnotice: () => {} });
  store = new PostgresSessionStore(viaProxy);
  direct = new PostgresSessionStore(database.sql);
});

afterAll(async () => {
  await viaProxy?.end({ timeout: 5 });
  await proxy?.close();
  await database?.drop();
});

describe('ambiguous commit', () => {
  it('is not reported as a refusal, is durable, and resolves by repeating the identical append', async () => {
    await store.create(record);
    const { fencingToken } = await store.acquire(ESCROW);
    await store.appendDiff(ESCROW, diffAt(1n, 1), fencingToken);

    const cut = proxy.cutAtCommit(/insert into session_diffs/);
    const failure = await store.appendDiff(ESCROW, diffAt(2n, 2), fencingToken).then(
      () => undefined,
      (error: unknown) => error,
    );
    await cut;
    expect(proxy.cuts).toBe(1);
    expect(failure).toBeInstanceOf(Error);
    expect(isSessionStoreError(failure)).toBe(false);

    // The commit did happen: nonce 2 is taken by exactly the diff whose reply was lost.
    const after = await direct.load(ESCROW);
    expect(after?.lastNonce).toBe(2n);
    expect(Buffer.from(after!.diffs[1]!.diff.userSig).equals(Buffer.from(diffAt(2n, 2).diff.userSig))).toBe(
      true,
    );

    // Resolution by repeating the call (the pool reconnects): a no-op success.
    await store.appendDiff(ESCROW, diffAt(2n, 2), fencingToken);
    // A freshly signed different diff for nonce 2 can never be stored next to it.
    await expect(store.appendDiff(ESCROW, diffAt(2n, 9), fencingToken)).rejects.toMatchObject({
      code: 'nonce_conflict',
    });
    const final = await direct.load(ESCROW);
    expect(final?.lastNonce).toBe(2n);
    expect(final?.diffs.map((d) => d.diff.userSig[0])).toEqual([1, 2]);
    // The session goes on at nonce 3 through the same store.
    await store.appendDiff(ESCROW, diffAt(3n, 3), fencingToken);
    expect((await direct.load(ESCROW))?.lastNonce).toBe(3n);
  });

  it('reports a lost reply to a shared statement to each of its writes, each resolved by repeating it', async () => {
    const ids = ['4401', '4402', '4403'];
    const tokens = await Promise.all(
      ids.map(async (id) => {
        await store.create({ ...record, escrowId: id, escrow: { ...record.escrow, escrowId: BigInt(id) } });
        return (await store.acquire(id)).fencingToken;
      }),
    );
    // Only the statement that carries several write-aheads (group commit) is cut.
    const cut = proxy.cutAtCommit(/with ordinality as i\(escrow_id, nonce/);
    // The first goes alone; the other two wait for it and share the next statement.
    const results = await Promise.all(
      ids.map((id, i) =>
        store.appendDiff(id, diffAt(1n, 10 + i), tokens[i]!).then(
          () => undefined,
          (e: unknown) => e,
        ),
      ),
    );
    await cut;
    expect(results[0]).toBeUndefined();
    for (const failure of results.slice(1)) {
      expect(failure).toBeInstanceOf(Error);
      expect(isSessionStoreError(failure)).toBe(false);
    }
    // Both committed; repeating each identical append is a no-op, another diff is refused.
    for (const [i, id] of ids.entries()) {
      expect((await direct.load(id))?.lastNonce).toBe(1n);
      await store.appendDiff(id, diffAt(1n, 10 + i), tokens[i]!);
      await expect(store.appendDiff(id, diffAt(1n, 99), tokens[i]!)).rejects.toMatchObject({
        code: 'nonce_conflict',
      });
    }
  });

  it('leaves pending txs and tokens safe to retry when the reply to their commit is lost', async () => {
    const id = '4343';
    await store.create({ ...record, escrowId: id, escrow: { ...record.escrow, escrowId: 4343n } });
    const { fencingToken } = await store.acquire(id);
    const pending = [{ key: 'confirm:1', bytes: Uint8Array.of(1) }];

    // The fenced write is one statement: the reply to its implicit commit is what gets lost.
    let cut = proxy.cutAtCommit(/insert into session_pending_txs/);
    const lostAdd = await store.saveWrites(id, { addPending: pending }, fencingToken).then(
      () => undefined,
      (e: unknown) => e,
    );
    await cut;
    expect(isSessionStoreError(lostAdd)).toBe(false);
    await store.saveWrites(id, { addPending: pending }, fencingToken);
    expect((await direct.load(id))?.pendingTxs.map((p) => p.key)).toEqual(['confirm:1']);

    // A token minted by an acquire whose reply was lost is simply skipped: the retry mints a newer
    // one, which fences the lost one like any older owner's.
    cut = proxy.cutAtCommit(/set fencing_token = fencing_token \+ 1/);
    const lostAcquire = await store.acquire(id).then(
      () => undefined,
      (e: unknown) => e,
    );
    await cut;
    expect(isSessionStoreError(lostAcquire)).toBe(false);
    const retried = await store.acquire(id);
    expect(retried.fencingToken).toBe(fencingToken + 2n);
    await expect(store.appendDiff(id, diffAt(1n, 1), fencingToken + 1n)).rejects.toMatchObject({
      code: 'stale_token',
    });
    await store.appendDiff(id, diffAt(1n, 1), retried.fencingToken);
    expect(proxy.cuts).toBe(4);
  });
});
