// The SessionStore contract as a reusable suite: every implementation (memory here, Postgres in the
// proxy/controller) runs it unchanged, so the session code can rely on the same conditional writes
// everywhere (architecture §2.3). The test API is passed in and assertions use node:assert, so this
// module has no test-runner dependency at runtime.
import assert from 'node:assert/strict';
import { newMsg, txOf } from '../proto/tx-builders.js';
import type { SignedDiff } from '../signing/diff.js';
import {
  type SessionRecord,
  type SessionStore,
  SessionStoreErrorCode,
  type StoredDiff,
  type StoredSession,
} from './store.js';

/** The subset of vitest (or node:test) the suite needs. */
export interface ContractTestApi {
  describe(name: string, fn: () => void): void;
  it(name: string, fn: () => Promise<void>): void;
}

export interface SessionStoreContractOptions {
  /** A fresh escrow id per test (default: time-based canonical decimals, unique per suite run). */
  readonly escrowId?: () => string;
}

const hex = (b: Uint8Array | undefined) => (b ? Buffer.from(b).toString('hex') : undefined);

function contractRecord(escrowId: string): SessionRecord {
  return {
    escrowId,
    escrow: {
      escrowId: BigInt(escrowId),
      creator: 'gonka1creator',
      amount: 10_000_000n,
      slots: ['gonka1a', 'gonka1b', 'gonka1a'],
      tokenPrice: 2n,
      feePerNonce: 1_000n,
      voteThresholdFactor: 50,
    },
    tag: 'v5',
    version: 'v5',
    chainParams: { refusalTimeout: 60n, executionTimeout: 1_920n },
  };
}

function contractDiff(nonce: bigint, withPayload = false): StoredDiff {
  const confirm = txOf.confirmStart(
    newMsg.confirmStart({ inferenceId: nonce, executorSig: new Uint8Array(65).fill(7), confirmedAt: 99n }),
  );
  const diff: SignedDiff = {
    nonce,
    txs: [confirm, txOf.finalizeRound()],
    userSig: new Uint8Array(65).fill(Number(nonce % 250n) + 1),
    postStateRoot: nonce % 2n === 0n ? new Uint8Array(32).fill(3) : new Uint8Array(0),
  };
  return {
    nonce,
    diff,
    root: new Uint8Array(32).fill(Number(nonce % 250n)),
    warmKeysBound: nonce === 1n ? [{ slot: 1, coldAddress: 'gonka1b', address: 'gonka1warm' }] : [],
    ...(withPayload
      ? {
          payload: {
            prompt: new TextEncoder().encode('{"messages":[]}'),
            model: 'm',
            inputLength: 12n,
            maxTokens: 64n,
            startedAt: 1_700_000_000n,
          },
        }
      : {}),
  };
}

/** Another signed diff for the same nonce (a second writer's). */
function otherDiff(nonce: bigint): StoredDiff {
  const d = contractDiff(nonce);
  return {
    ...d,
    diff: { ...d.diff, userSig: new Uint8Array(65).fill(251) },
    root: new Uint8Array(32).fill(9),
  };
}

function diffView(d: StoredDiff) {
  return {
    nonce: d.nonce,
    txs: d.diff.txs.map((t) => [t.tx.kind, hex(t.bytes)]),
    userSig: hex(d.diff.userSig),
    postStateRoot: hex(d.diff.postStateRoot),
    root: hex(d.root),
    warmKeysBound: d.warmKeysBound.map((b) => ({ ...b })),
    payload: d.payload ? { ...d.payload, prompt: hex(d.payload.prompt) } : undefined,
  };
}

async function rejectsWith(promise: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.equal((error as { code?: unknown }).code, code);
    return true;
  });
}

async function loaded(store: SessionStore, escrowId: string): Promise<StoredSession> {
  const s = await store.load(escrowId);
  assert.ok(s, 'session should exist');
  return s;
}

export function sessionStoreContract(
  name: string,
  makeStore: () => SessionStore | Promise<SessionStore>,
  t: ContractTestApi,
  options: SessionStoreContractOptions = {},
): void {
  let seq = 0;
  const base = BigInt(Date.now()) * 1000n;
  const nextId = options.escrowId ?? (() => String(base + BigInt(++seq)));
  const fresh = async () => {
    const store = await makeStore();
    const escrowId = nextId();
    await store.create(contractRecord(escrowId));
    await store.acquire(escrowId); // token 1, the writer of every case below
    return { store, escrowId };
  };

  t.describe(`SessionStore contract: ${name}`, () => {
    t.it('creates once and loads the record back with no diffs', async () => {
      const { store, escrowId } = await fresh();
      const s = await loaded(store, escrowId);
      assert.deepEqual(s.record, contractRecord(escrowId));
      assert.equal(s.diffs.length, 0);
      assert.equal(s.pendingTxs.length, 0);
      assert.equal(s.hostSync.size, 0);
      assert.equal(s.finalizeDocument, undefined);
      await rejectsWith(store.create(contractRecord(escrowId)), SessionStoreErrorCode.Exists);
      assert.equal(await store.load(nextId()), undefined);
    });

    t.it('appends diffs at last + 1 and loads them in nonce order, bytes intact', async () => {
      const { store, escrowId } = await fresh();
      const diffs = [contractDiff(1n, true), contractDiff(2n), contractDiff(3n)];
      for (const d of diffs) await store.appendDiff(escrowId, d, 1n);
      const s = await loaded(store, escrowId);
      assert.deepEqual(s.diffs.map(diffView), diffs.map(diffView));
    });

    t.it('refuses a diff whose nonce is not last + 1, changing nothing', async () => {
      const { store, escrowId } = await fresh();
      await rejectsWith(
        store.appendDiff(escrowId, contractDiff(2n), 1n),
        SessionStoreErrorCode.NonceConflict,
      );
      await store.appendDiff(escrowId, contractDiff(1n), 1n);
      await rejectsWith(store.appendDiff(escrowId, otherDiff(1n), 1n), SessionStoreErrorCode.NonceConflict);
      await rejectsWith(
        store.appendDiff(escrowId, contractDiff(3n), 1n),
        SessionStoreErrorCode.NonceConflict,
      );
      assert.deepEqual(
        (await loaded(store, escrowId)).diffs.map((d) => d.nonce),
        [1n],
      );
      await rejectsWith(store.appendDiff(nextId(), contractDiff(1n), 1n), SessionStoreErrorCode.NotFound);
    });

    t.it('lets exactly one of two concurrent writers take a nonce', async () => {
      const { store, escrowId } = await fresh();
      const results = await Promise.allSettled([
        store.appendDiff(escrowId, contractDiff(1n), 1n),
        store.appendDiff(escrowId, otherDiff(1n), 1n),
      ]);
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
      assert.equal((await loaded(store, escrowId)).diffs.length, 1);
    });

    t.it(
      'mints tokens at acquire, with the load, and fences every other token on every content write',
      async () => {
        const { store, escrowId } = await fresh();
        assert.equal((await loaded(store, escrowId)).fencingToken, 1n);
        await store.appendDiff(escrowId, contractDiff(1n), 1n);
        const taken = await store.acquire(escrowId);
        assert.equal(taken.fencingToken, 2n);
        assert.equal(taken.lastNonce, 1n);
        assert.deepEqual(
          taken.diffs.map((d) => d.nonce),
          [1n],
        );
        for (const token of [1n, 3n]) {
          await rejectsWith(
            store.appendDiff(escrowId, contractDiff(2n), token),
            SessionStoreErrorCode.StaleToken,
          );
          await rejectsWith(store.addPendingTxs(escrowId, [], token), SessionStoreErrorCode.StaleToken);
          await rejectsWith(store.removePendingTxs(escrowId, [], token), SessionStoreErrorCode.StaleToken);
          await rejectsWith(store.prunePayloads(escrowId, [], token), SessionStoreErrorCode.StaleToken);
          await rejectsWith(
            store.saveFinalizeDocument(escrowId, '{}', token),
            SessionStoreErrorCode.StaleToken,
          );
        }
        await store.appendDiff(escrowId, contractDiff(2n), 2n);
        const s = await loaded(store, escrowId);
        assert.equal(s.fencingToken, 2n);
        assert.deepEqual(
          s.diffs.map((d) => d.nonce),
          [1n, 2n],
        );
        await rejectsWith(store.acquire(nextId()), SessionStoreErrorCode.NotFound);
      },
    );

    t.it(
      'takes the identical diff again as a no-op (an ambiguous commit is resolved by repeating it)',
      async () => {
        const { store, escrowId } = await fresh();
        await store.appendDiff(escrowId, contractDiff(1n), 1n);
        await store.appendDiff(escrowId, contractDiff(1n), 1n);
        await rejectsWith(store.appendDiff(escrowId, otherDiff(1n), 1n), SessionStoreErrorCode.NonceConflict);
        assert.equal((await loaded(store, escrowId)).lastNonce, 1n);
      },
    );

    t.it('keeps pending txs one row per key: added, removed, and consumed with a diff', async () => {
      const { store, escrowId } = await fresh();
      const a = { bytes: txOf.finalizeRound().bytes, key: 'confirm:3' };
      const b = { bytes: Uint8Array.of(0x42, 0x00, 1), key: 'tx:b' };
      const c = { bytes: Uint8Array.of(7), key: 'finish:3' };
      await store.addPendingTxs(escrowId, [a, b, c], 1n);
      await store.addPendingTxs(escrowId, [{ bytes: Uint8Array.of(9), key: 'confirm:3' }], 1n);
      let s = await loaded(store, escrowId);
      assert.deepEqual(
        s.pendingTxs.map((p) => [hex(p.bytes), p.key]),
        [
          [hex(a.bytes), 'confirm:3'],
          [hex(b.bytes), 'tx:b'],
          [hex(c.bytes), 'finish:3'],
        ],
      );
      await store.removePendingTxs(escrowId, ['tx:b'], 1n);
      await store.appendDiff(escrowId, contractDiff(1n), 1n, ['confirm:3']);
      s = await loaded(store, escrowId);
      assert.deepEqual(
        s.pendingTxs.map((p) => p.key),
        ['finish:3'],
      );
    });

    t.it('keeps host progress monotonic per address', async () => {
      const { store, escrowId } = await fresh();
      await store.saveHostProgress(escrowId, 'gonka1a', 5n);
      await store.saveHostProgress(escrowId, 'gonka1a', 3n);
      await store.saveHostProgress(escrowId, 'gonka1b', 9n);
      const s = await loaded(store, escrowId);
      assert.equal(s.hostSync.get('gonka1a'), 5n);
      assert.equal(s.hostSync.get('gonka1b'), 9n);
    });

    t.it('merges signatures per nonce and slot', async () => {
      const { store, escrowId } = await fresh();
      const sig = (v: number) => new Uint8Array(65).fill(v);
      await store.saveSignatures(escrowId, 4n, [
        { slotId: 0, signature: sig(1) },
        { slotId: 2, signature: sig(1) },
      ]);
      await store.saveSignatures(escrowId, 4n, [
        { slotId: 1, signature: sig(2) },
        { slotId: 0, signature: sig(3) },
      ]);
      await store.saveSignatures(escrowId, 5n, [{ slotId: 1, signature: sig(4) }]);
      const at4 = await store.loadSignatures(escrowId, 4n);
      assert.deepEqual(
        [...at4].sort((x, y) => x[0] - y[0]).map(([slot, s]) => [slot, s[0]]),
        [
          [0, 1],
          [1, 2],
          [2, 1],
        ],
      );
      assert.equal((await store.loadSignatures(escrowId, 5n)).get(1)?.[0], 4);
      assert.equal((await store.loadSignatures(escrowId, 6n)).size, 0);
    });

    t.it('stores the finalize document once', async () => {
      const { store, escrowId } = await fresh();
      await store.saveFinalizeDocument(escrowId, '{"nonce":17}', 1n);
      await store.saveFinalizeDocument(escrowId, '{"nonce":17}', 1n);
      await rejectsWith(
        store.saveFinalizeDocument(escrowId, '{"nonce":18}', 1n),
        SessionStoreErrorCode.DocumentConflict,
      );
      assert.equal((await loaded(store, escrowId)).finalizeDocument, '{"nonce":17}');
    });

    t.it('does not let callers alter stored bytes', async () => {
      const { store, escrowId } = await fresh();
      const pending = { bytes: Uint8Array.of(1, 2, 3), key: 'tx:1' };
      await store.addPendingTxs(escrowId, [pending], 1n);
      pending.bytes[0] = 9;
      const s = await loaded(store, escrowId);
      s.pendingTxs[0]!.bytes[1] = 9;
      assert.deepEqual([...(await loaded(store, escrowId)).pendingTxs[0]!.bytes], [1, 2, 3]);
    });
  });
}
