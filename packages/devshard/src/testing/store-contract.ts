// The SessionStore contract as a reusable suite: every implementation (memory here, Postgres in the
// proxy/controller) runs it unchanged, so the session code can rely on the same conditional writes
// everywhere (architecture §2.3). The test API is passed in and assertions use node:assert, so this
// module has no test-runner dependency at runtime.
import assert from 'node:assert/strict';
import { newMsg, txOf } from '../proto/tx-builders.js';
import {
  type SessionRecord,
  type SessionStore,
  SessionStoreErrorCode,
  type StoredDiff,
  type StoredPendingTx,
  type StoredSession,
} from '../session/store.js';
import type { SignedDiff } from '../signing/diff.js';

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

export function contractRecord(escrowId: string): SessionRecord {
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

/**
 * A diff at `nonce`; `variant` changes the user signature, so two variants at one nonce are
 * different signed diffs (what two writers racing for a nonce would produce).
 */
export function contractDiff(nonce: bigint, withPayload = false, variant = 0): StoredDiff {
  const confirm = txOf.confirmStart(
    newMsg.confirmStart({ inferenceId: nonce, executorSig: new Uint8Array(65).fill(7), confirmedAt: 99n }),
  );
  const diff: SignedDiff = {
    nonce,
    txs: [confirm, txOf.finalizeRound()],
    userSig: new Uint8Array(65).fill(Number(nonce % 250n) + 1).fill(variant, 0, variant > 0 ? 4 : 0),
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
  /** A new session, taken by one owner: `token` is the token its acquire minted. */
  const fresh = async () => {
    const store = await makeStore();
    const escrowId = nextId();
    await store.create(contractRecord(escrowId));
    const { fencingToken: token } = await store.acquire(escrowId);
    return { store, escrowId, token };
  };
  const pendingView = (s: StoredSession) => s.pendingTxs.map((p) => [p.key, hex(p.bytes)]);

  t.describe(`SessionStore contract: ${name}`, () => {
    t.it('creates once and loads the record back with no diffs', async () => {
      const store = await makeStore();
      const escrowId = nextId();
      await store.create(contractRecord(escrowId));
      const s = await loaded(store, escrowId);
      assert.deepEqual(s.record, contractRecord(escrowId));
      assert.equal(s.fencingToken, 0n);
      assert.equal(s.lastNonce, 0n);
      assert.equal(s.snapshot, undefined);
      assert.equal(s.diffs.length, 0);
      assert.equal(s.pendingTxs.length, 0);
      assert.equal(s.hostSync.size, 0);
      assert.equal(s.payloads.size, 0);
      assert.equal(s.finalizeDocument, undefined);
      await rejectsWith(store.create(contractRecord(escrowId)), SessionStoreErrorCode.Exists);
      assert.equal(await store.load(nextId()), undefined);
      await rejectsWith(store.acquire(nextId()), SessionStoreErrorCode.NotFound);
    });

    t.it('appends diffs at last + 1 and loads them in nonce order, bytes intact', async () => {
      const { store, escrowId, token } = await fresh();
      const diffs = [contractDiff(1n, true), contractDiff(2n), contractDiff(3n)];
      for (const d of diffs) await store.appendDiff(escrowId, d, token);
      const s = await loaded(store, escrowId);
      assert.equal(s.lastNonce, 3n);
      assert.deepEqual(s.diffs.map(diffView), diffs.map(diffView));
      assert.deepEqual((await store.acquire(escrowId)).diffs.map(diffView), diffs.map(diffView));
    });

    t.it('refuses a diff whose nonce is not last + 1, changing nothing', async () => {
      const { store, escrowId, token } = await fresh();
      await rejectsWith(
        store.appendDiff(escrowId, contractDiff(2n), token),
        SessionStoreErrorCode.NonceConflict,
      );
      await rejectsWith(
        store.appendDiff(escrowId, contractDiff(0n), token),
        SessionStoreErrorCode.NonceConflict,
      );
      await store.appendDiff(escrowId, contractDiff(1n), token);
      await rejectsWith(
        store.appendDiff(escrowId, contractDiff(1n, false, 9), token),
        SessionStoreErrorCode.NonceConflict,
      );
      await rejectsWith(
        store.appendDiff(escrowId, contractDiff(3n), token),
        SessionStoreErrorCode.NonceConflict,
      );
      const s = await loaded(store, escrowId);
      assert.equal(s.lastNonce, 1n);
      assert.deepEqual(s.diffs.map(diffView), [diffView(contractDiff(1n))]);
      await rejectsWith(store.appendDiff(nextId(), contractDiff(1n), token), SessionStoreErrorCode.NotFound);
    });

    t.it('treats the identical diff again as a no-op and a different one as nonce_conflict', async () => {
      const { store, escrowId, token } = await fresh();
      const pending = [{ key: 'p', bytes: Uint8Array.of(1) }];
      await store.appendDiff(escrowId, contractDiff(1n, true), token);
      await store.appendDiff(escrowId, contractDiff(2n), token);
      await store.saveWrites(escrowId, { addPending: pending }, token);
      // An ambiguous commit is resolved by repeating the call: same signed diff, any nonce ≤ last.
      // The writes it carried landed with the first call; the repeat writes nothing.
      await store.appendDiff(escrowId, contractDiff(1n, true), token, {
        deletePending: ['p'],
        hostProgress: [{ address: 'gonka1a', nonce: 1n }],
      });
      await store.appendDiff(escrowId, contractDiff(2n), token);
      for (const other of [
        contractDiff(2n, false, 5),
        { ...contractDiff(2n), diff: { ...contractDiff(2n).diff, postStateRoot: new Uint8Array(0) } },
        { ...contractDiff(2n), diff: { ...contractDiff(2n).diff, txs: contractDiff(2n).diff.txs.slice(1) } },
      ]) {
        await rejectsWith(store.appendDiff(escrowId, other, token), SessionStoreErrorCode.NonceConflict);
      }
      const s = await loaded(store, escrowId);
      assert.equal(s.lastNonce, 2n);
      assert.deepEqual(s.diffs.map(diffView), [contractDiff(1n, true), contractDiff(2n)].map(diffView));
      assert.deepEqual(pendingView(s), [['p', '01']], 'a no-op append consumes nothing');
      assert.equal(s.hostSync.size, 0, 'a no-op append writes nothing it carries');
    });

    t.it('lets exactly one of two concurrent writers take a nonce', async () => {
      const { store, escrowId, token } = await fresh();
      const results = await Promise.allSettled([
        store.appendDiff(escrowId, contractDiff(1n), token),
        store.appendDiff(escrowId, contractDiff(1n, false, 9), token),
      ]);
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
      assert.equal((await loaded(store, escrowId)).diffs.length, 1);
    });

    t.it('leaves exactly one row when 50 appenders race for one nonce', async () => {
      const { store, escrowId, token } = await fresh();
      const candidates = Array.from({ length: 50 }, (_, i) => contractDiff(1n, true, i + 1));
      const results = await Promise.allSettled(candidates.map((d) => store.appendDiff(escrowId, d, token)));
      const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
      assert.equal(won.length, 1);
      for (const r of results) {
        if (r.status === 'rejected')
          assert.equal((r.reason as { code?: unknown }).code, SessionStoreErrorCode.NonceConflict);
      }
      const s = await loaded(store, escrowId);
      assert.equal(s.lastNonce, 1n);
      assert.deepEqual(s.diffs.map(diffView), [diffView(candidates[won[0]!]!)]);
      assert.deepEqual([...s.payloads.keys()], [1n]);
    });

    t.it('mints distinct tokens for concurrent acquires', async () => {
      const store = await makeStore();
      const escrowId = nextId();
      await store.create(contractRecord(escrowId));
      const taken = await Promise.all(Array.from({ length: 12 }, () => store.acquire(escrowId)));
      const tokens = taken.map((s) => s.fencingToken).sort((a, b) => (a < b ? -1 : 1));
      assert.deepEqual(
        tokens,
        Array.from({ length: 12 }, (_, i) => BigInt(i + 1)),
      );
      assert.equal((await loaded(store, escrowId)).fencingToken, 12n);
      assert.equal((await loaded(store, escrowId)).fencingToken, 12n, 'load mints nothing');
    });

    t.it(
      'acquire fences every older token on every content write and returns the session as of then',
      async () => {
        const { store, escrowId, token: first } = await fresh();
        await store.appendDiff(escrowId, contractDiff(1n, true), first);
        await store.saveWrites(escrowId, { addPending: [{ key: 'a', bytes: Uint8Array.of(1) }] }, first);
        const taken = await store.acquire(escrowId);
        const second = taken.fencingToken;
        assert.ok(second > first);
        assert.equal(taken.lastNonce, 1n);
        assert.deepEqual(taken.diffs.map(diffView), [diffView(contractDiff(1n, true))]);
        assert.deepEqual(pendingView(taken), [['a', '01']]);
        const stale = SessionStoreErrorCode.StaleToken;
        await rejectsWith(store.appendDiff(escrowId, contractDiff(2n), first), stale);
        await rejectsWith(store.appendDiff(escrowId, contractDiff(1n, true), first), stale);
        await rejectsWith(
          store.saveWrites(escrowId, { addPending: [{ key: 'b', bytes: Uint8Array.of(2) }] }, first),
          stale,
        );
        await rejectsWith(store.saveWrites(escrowId, { deletePending: ['a'] }, first), stale);
        await rejectsWith(store.saveWrites(escrowId, { prunePayloads: [1n] }, first), stale);
        await rejectsWith(
          store.saveWrites(escrowId, { hostProgress: [{ address: 'gonka1a', nonce: 1n }] }, first),
          stale,
        );
        await rejectsWith(
          store.saveWrites(
            escrowId,
            { signatures: [{ nonce: 1n, signatures: [{ slotId: 0, signature: Uint8Array.of(1) }] }] },
            first,
          ),
          stale,
        );
        await rejectsWith(
          store.saveSnapshot(
            escrowId,
            { nonce: 1n, root: contractDiff(1n).root, state: Uint8Array.of(1) },
            first,
          ),
          stale,
        );
        await rejectsWith(store.saveFinalizeDocument(escrowId, '{}', first), stale);
        // A token never minted is not current either: writes need exactly the current one.
        await rejectsWith(store.appendDiff(escrowId, contractDiff(2n), second + 1n), stale);
        await rejectsWith(store.saveWrites(escrowId, {}, second + 1n), stale);
        await store.appendDiff(escrowId, contractDiff(2n), second);
        const s = await loaded(store, escrowId);
        assert.equal(s.fencingToken, second);
        assert.deepEqual(
          s.diffs.map((d) => d.nonce),
          [1n, 2n],
        );
        assert.deepEqual(pendingView(s), [['a', '01']]);
        assert.deepEqual([...s.payloads.keys()], [1n]);
        assert.equal(s.snapshot, undefined);
        assert.equal(s.finalizeDocument, undefined);
        assert.equal(s.hostSync.size, 0);
        assert.equal((await store.loadSignatures(escrowId, 1n)).size, 0);
        await rejectsWith(store.saveWrites(nextId(), {}, 1n), SessionStoreErrorCode.NotFound);
      },
    );

    t.it('keeps pending txs per dedup key, consumed atomically with the diff', async () => {
      const { store, escrowId, token } = await fresh();
      const tx = (key: string, ...bytes: number[]): StoredPendingTx => ({
        key,
        bytes: Uint8Array.from(bytes),
      });
      await store.saveWrites(escrowId, { addPending: [tx('confirm:3', 0x42, 0), tx('tx:ab', 1, 2)] }, token);
      // A key already pending is left as it is (first bytes kept), new keys append in order.
      await store.saveWrites(escrowId, { addPending: [tx('confirm:3', 9), tx('finish:3', 3)] }, token);
      assert.deepEqual(pendingView(await loaded(store, escrowId)), [
        ['confirm:3', '4200'],
        ['tx:ab', '0102'],
        ['finish:3', '03'],
      ]);
      // The diff carries adds too: a key both added and deleted ends up absent.
      await store.appendDiff(escrowId, contractDiff(1n), token, {
        deletePending: ['confirm:3', 'not-pending', 'val:1'],
        addPending: [tx('vote:2', 5), tx('val:1', 6)],
      });
      assert.deepEqual(pendingView(await loaded(store, escrowId)), [
        ['tx:ab', '0102'],
        ['finish:3', '03'],
        ['vote:2', '05'],
      ]);
      // A refused append writes nothing it carries.
      const carried = { deletePending: ['tx:ab'], addPending: [tx('x', 1)], prunePayloads: [1n] };
      await rejectsWith(
        store.appendDiff(escrowId, contractDiff(3n), token, carried),
        SessionStoreErrorCode.NonceConflict,
      );
      await rejectsWith(
        store.appendDiff(escrowId, contractDiff(2n), token + 1n, carried),
        SessionStoreErrorCode.StaleToken,
      );
      assert.equal((await loaded(store, escrowId)).pendingTxs.length, 3);
      await store.saveWrites(escrowId, { deletePending: ['finish:3', 'unknown', 'vote:2'] }, token);
      await store.saveWrites(escrowId, { addPending: [tx('confirm:3', 7)] }, token);
      const s = await loaded(store, escrowId);
      assert.deepEqual(pendingView(s), [
        ['tx:ab', '0102'],
        ['confirm:3', '07'],
      ]);
      assert.deepEqual(pendingView(await store.acquire(escrowId)), pendingView(s));
    });

    t.it('returns payloads until they are pruned', async () => {
      const { store, escrowId, token } = await fresh();
      await store.appendDiff(escrowId, contractDiff(1n, true), token);
      await store.appendDiff(escrowId, contractDiff(2n), token);
      await store.appendDiff(escrowId, contractDiff(3n, true), token);
      let s = await loaded(store, escrowId);
      assert.deepEqual([...s.payloads.keys()].sort(), [1n, 3n]);
      assert.deepEqual(
        diffView({ ...contractDiff(3n), payload: s.payloads.get(3n)! }),
        diffView(contractDiff(3n, true)),
      );
      await store.saveWrites(escrowId, { prunePayloads: [1n, 2n, 99n] }, token);
      s = await loaded(store, escrowId);
      assert.deepEqual([...s.payloads.keys()], [3n]);
      assert.deepEqual(
        s.diffs.map(diffView),
        [contractDiff(1n), contractDiff(2n), contractDiff(3n, true)].map(diffView),
      );
      assert.deepEqual(
        (await store.readDiffs(escrowId, 1n, 3n)).map((d) => d.payload !== undefined),
        [false, false, true],
      );
      const { fencingToken } = await store.acquire(escrowId);
      assert.deepEqual([...(await loaded(store, escrowId)).payloads.keys()], [3n]);
      // The diff that moves an inference out of Pending prunes its payload in the same write, and
      // stores its own.
      await store.appendDiff(escrowId, contractDiff(4n, true), fencingToken, { prunePayloads: [3n] });
      assert.deepEqual([...(await loaded(store, escrowId)).payloads.keys()], [4n]);
    });

    t.it('saves snapshots at stored nonces and loads the newest with only the diffs after it', async () => {
      const { store, escrowId, token } = await fresh();
      for (let n = 1n; n <= 4n; n++) await store.appendDiff(escrowId, contractDiff(n, n === 2n), token);
      const snap = (nonce: bigint, v: number) => ({
        nonce,
        root: contractDiff(nonce).root,
        state: Uint8Array.of(v, v),
      });
      await rejectsWith(
        store.saveSnapshot(escrowId, snap(5n, 1), token),
        SessionStoreErrorCode.NonceConflict,
      );
      await rejectsWith(
        store.saveSnapshot(escrowId, snap(0n, 1), token),
        SessionStoreErrorCode.NonceConflict,
      );
      await store.saveSnapshot(escrowId, snap(2n, 2), token);
      let s = await loaded(store, escrowId);
      assert.equal(s.lastNonce, 4n);
      assert.deepEqual(s.snapshot && [s.snapshot.nonce, hex(s.snapshot.root), hex(s.snapshot.state)], [
        2n,
        hex(contractDiff(2n).root),
        '0202',
      ]);
      assert.deepEqual(
        s.diffs.map((d) => d.nonce),
        [3n, 4n],
      );
      assert.deepEqual([...s.payloads.keys()], [2n], 'payloads do not depend on the snapshot');
      await store.saveSnapshot(escrowId, snap(3n, 3), token);
      await store.saveSnapshot(escrowId, snap(1n, 1), token); // older than the newest: kept out
      s = await store.acquire(escrowId);
      assert.equal(s.snapshot?.nonce, 3n);
      assert.equal(hex(s.snapshot?.state), '0303');
      assert.deepEqual(
        s.diffs.map((d) => d.nonce),
        [4n],
      );
      await store.saveSnapshot(escrowId, snap(4n, 4), s.fencingToken);
      s = await loaded(store, escrowId);
      assert.equal(s.snapshot?.nonce, 4n);
      assert.equal(s.lastNonce, 4n);
      assert.equal(s.diffs.length, 0);
      assert.deepEqual(
        (await store.readDiffs(escrowId, 1n, 4n)).map((d) => d.nonce),
        [1n, 2n, 3n, 4n],
        'diffs before a snapshot stay readable',
      );
    });

    t.it('reads diff ranges inclusively, clipped to the stored nonces, in numeric order', async () => {
      const { store, escrowId, token } = await fresh();
      // 12 diffs: a store that ordered nonces as text would put 10–12 before 2.
      const all = Array.from({ length: 12 }, (_, i) => BigInt(i + 1));
      const diffs = all.map((n) => contractDiff(n, n === 3n));
      for (const d of diffs) await store.appendDiff(escrowId, d, token);
      const nonces = async (from: bigint, to: bigint) =>
        (await store.readDiffs(escrowId, from, to)).map((d) => d.nonce);
      assert.deepEqual(
        (await store.readDiffs(escrowId, 2n, 4n)).map(diffView),
        diffs.slice(1, 4).map(diffView),
      );
      assert.deepEqual(await nonces(0n, 2n), [1n, 2n]);
      assert.deepEqual(await nonces(9n, 99n), [9n, 10n, 11n, 12n]);
      assert.deepEqual(await nonces(1n, 12n), all);
      assert.deepEqual(await nonces(3n, 3n), [3n]);
      assert.deepEqual(await nonces(13n, 19n), []);
      assert.deepEqual(await nonces(4n, 2n), []);
      assert.deepEqual(
        (await loaded(store, escrowId)).diffs.map((d) => d.nonce),
        all,
      );
      await rejectsWith(store.readDiffs(nextId(), 1n, 2n), SessionStoreErrorCode.NotFound);
    });

    t.it('keeps host progress monotonic per address', async () => {
      const { store, escrowId, token } = await fresh();
      const progress = (address: string, nonce: bigint) => ({ address, nonce });
      await store.saveWrites(escrowId, { hostProgress: [progress('gonka1a', 5n)] }, token);
      await store.saveWrites(escrowId, { hostProgress: [progress('gonka1a', 3n)] }, token);
      // One write may name a host twice: the higher nonce counts.
      await store.saveWrites(
        escrowId,
        { hostProgress: [progress('gonka1b', 9n), progress('gonka1b', 2n)] },
        token,
      );
      const s = await loaded(store, escrowId);
      assert.equal(s.hostSync.get('gonka1a'), 5n);
      assert.equal(s.hostSync.get('gonka1b'), 9n);
      assert.equal(s.hostSync.size, 2);
    });

    t.it('merges signatures per nonce and slot', async () => {
      const { store, escrowId, token } = await fresh();
      const sig = (v: number) => new Uint8Array(65).fill(v);
      await store.saveWrites(
        escrowId,
        {
          signatures: [
            {
              nonce: 4n,
              signatures: [
                { slotId: 0, signature: sig(1) },
                { slotId: 2, signature: sig(1) },
              ],
            },
          ],
        },
        token,
      );
      // Carried by a diff too, several nonces at once.
      await store.appendDiff(escrowId, contractDiff(1n), token, {
        signatures: [
          {
            nonce: 4n,
            signatures: [
              { slotId: 1, signature: sig(2) },
              { slotId: 0, signature: sig(3) },
            ],
          },
          { nonce: 5n, signatures: [{ slotId: 1, signature: sig(4) }] },
        ],
      });
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
      const { store, escrowId, token } = await fresh();
      await store.saveFinalizeDocument(escrowId, '{"nonce":17}', token);
      await store.saveFinalizeDocument(escrowId, '{"nonce":17}', token);
      await rejectsWith(
        store.saveFinalizeDocument(escrowId, '{"nonce":18}', token),
        SessionStoreErrorCode.DocumentConflict,
      );
      assert.equal((await loaded(store, escrowId)).finalizeDocument, '{"nonce":17}');
    });

    t.it('does not let callers alter stored bytes', async () => {
      const { store, escrowId, token } = await fresh();
      const pending = { key: 'k', bytes: Uint8Array.of(1, 2, 3) };
      const diff = contractDiff(1n, true);
      await store.saveWrites(escrowId, { addPending: [pending] }, token);
      await store.appendDiff(escrowId, diff, token);
      const snapshot = { nonce: 1n, root: diff.root.slice(), state: Uint8Array.of(5, 6) };
      await store.saveSnapshot(escrowId, snapshot, token);
      pending.bytes[0] = 9;
      diff.payload!.prompt[0] = 0;
      diff.diff.userSig[0] = 0;
      (diff.diff.txs[0]!.bytes as Uint8Array)[0] = 0;
      (diff.root as Uint8Array)[0] = 9;
      snapshot.state[0] = 9;
      const s = await loaded(store, escrowId);
      s.pendingTxs[0]!.bytes[1] = 9;
      s.payloads.get(1n)!.prompt[1] = 0;
      s.snapshot!.state[1] = 9;
      const read = await store.readDiffs(escrowId, 1n, 1n);
      (read[0]!.diff.userSig as Uint8Array)[1] = 0;
      (read[0]!.diff.txs[1]!.bytes as Uint8Array)[0] = 0;
      (read[0]!.root as Uint8Array)[1] = 9;
      assert.deepEqual((await store.readDiffs(escrowId, 1n, 1n)).map(diffView), [
        diffView(contractDiff(1n, true)),
      ]);
      const again = await loaded(store, escrowId);
      assert.deepEqual([...again.pendingTxs[0]!.bytes], [1, 2, 3]);
      assert.deepEqual(hex(again.payloads.get(1n)!.prompt), hex(contractDiff(1n, true).payload!.prompt));
      assert.deepEqual([...again.snapshot!.state], [5, 6]);
    });
  });
}
