import { describe, expect, it } from 'vitest';
import { dedupKeys } from '../state/candidates.js';
import { ESCROW_ID, request, setup } from '../testing/session-setup.js';
import { wrapStore } from '../testing/wrap-store.js';
import { type SessionStore, SessionStoreError, SessionStoreErrorCode, type SessionWrites } from './store.js';

/** The store, recording every write call by method name (with what saveWrites / appendDiff carried). */
function counted(inner: SessionStore) {
  const calls: { method: string; writes?: SessionWrites }[] = [];
  const record = (method: string, writes?: SessionWrites) =>
    calls.push({ method, ...(writes ? { writes } : {}) });
  const store = wrapStore(inner, {
    appendDiff: (id, d, t, w) => {
      record('appendDiff', w);
      return inner.appendDiff(id, d, t, w);
    },
    saveWrites: (id, w, t) => {
      record('saveWrites', w);
      return inner.saveWrites(id, w, t);
    },
    saveSnapshot: (id, s, t) => {
      record('saveSnapshot');
      return inner.saveSnapshot(id, s, t);
    },
    saveFinalizeDocument: (id, j, t) => {
      record('saveFinalizeDocument');
      return inner.saveFinalizeDocument(id, j, t);
    },
  });
  return { store, calls, take: () => calls.splice(0) };
}

describe('store writes per chat request: one before the host, at most one after', () => {
  it('writes the diff with everything waiting, then the Confirm/Finish with host progress and signature', async () => {
    const t = setup();
    await t.init();
    const { store, take } = counted(t.store);
    const s = await t.open({ store });
    await s.recoverFromMempools(); // what open started; nothing to read before the first nonce
    take();
    let previous: bigint | undefined;
    for (let i = 0; i < 4; i++) {
      const r = await s.infer(request());
      expect(r).toMatchObject({ status: 'completed', confirmed: true, finished: true });
      const calls = take();
      expect(calls.map((c) => c.method)).toEqual(['appendDiff', 'saveWrites']);
      const [append, after] = calls.map((c) => c.writes ?? {});
      if (previous !== undefined) {
        // The diff consumes the previous inference's Confirm and Finish and prunes its payload.
        expect(append!.deletePending).toEqual([dedupKeys.confirm(previous), dedupKeys.finish(previous)]);
        expect(append!.prunePayloads).toEqual([previous]);
      }
      // After the answer: this inference's Confirm and Finish, its executor's progress and signature.
      expect(after!.addPending?.map((p) => p.key)).toEqual([
        dedupKeys.confirm(r.nonce),
        dedupKeys.finish(r.nonce),
      ]);
      expect(after!.hostProgress).toEqual([{ address: r.executor, nonce: r.nonce }]);
      expect(after!.signatures?.map((x) => x.nonce)).toEqual([r.nonce]);
      // …all durable before infer() answered.
      const stored = (await t.store.load(ESCROW_ID))!;
      expect(stored.pendingTxs.map((p) => p.key)).toEqual([
        dedupKeys.confirm(r.nonce),
        dedupKeys.finish(r.nonce),
      ]);
      expect(stored.hostSync.get(r.executor)).toBe(r.nonce);
      expect([...stored.payloads.keys()]).toEqual([r.nonce]);
      expect((await t.store.loadSignatures(ESCROW_ID, r.nonce)).size).toBeGreaterThan(0);
      previous = r.nonce;
    }
  });

  it('keeps host progress for the next statement when nothing else changed, and drain stores it', async () => {
    const t = setup();
    await t.init();
    const { store, take } = counted(t.store);
    const s = await t.open({ store });
    const r = await s.infer(request());
    await s.drain();
    take();
    // A second owner's flush: its diff carries the Confirm/Finish; the host's answer leaves only
    // host progress and a signature, which wait (no pending-tx change to make durable).
    const b = await t.open({ store });
    await b.recoverFromMempools();
    take();
    const flushed = await b.flush();
    expect(flushed?.delivered).toBe(true);
    expect(take().map((c) => c.method)).toEqual(['appendDiff']);
    expect(b.hasWaitingWrites).toBe(true);
    expect((await t.store.load(ESCROW_ID))!.hostSync.get(flushed!.target)).not.toBe(flushed!.nonce);
    await b.drain();
    expect(take().map((c) => c.method)).toEqual(['saveWrites']);
    expect(b.hasWaitingWrites).toBe(false);
    expect((await t.store.load(ESCROW_ID))!.hostSync.get(flushed!.target)).toBe(flushed!.nonce);
    expect(r.nonce).toBe(1n);
  });

  it('a refused write-ahead puts back what it carried: the next statement writes it', async () => {
    const t = setup();
    await t.init();
    let refuse = false;
    const { store, take } = counted(
      wrapStore(t.store, {
        appendDiff: async (id, d, tok, w) => {
          // A definite refusal (nothing written), not an unknown outcome.
          if (refuse) throw new SessionStoreError(SessionStoreErrorCode.NotFound, 'refused');
          return t.store.appendDiff(id, d, tok, w);
        },
        saveWrites: async () => {
          throw new Error('connection lost');
        },
      }),
    );
    const s = await t.open({ store });
    const first = await s.infer(request());
    take();
    // The Confirm/Finish of `first` did not reach the store (saveWrites failed): they wait.
    expect(s.hasWaitingWrites).toBe(true);
    refuse = true;
    await expect(s.infer(request())).rejects.toThrow();
    refuse = false;
    const second = await s.infer(request());
    const append = take().find((c) => c.method === 'appendDiff' && c.writes?.hostProgress?.length);
    // The diff that landed carries the first answer's host progress and consumes its Confirm/Finish.
    expect(append?.writes?.hostProgress).toContainEqual({ address: first.executor, nonce: first.nonce });
    expect(append?.writes?.deletePending).toEqual([
      dedupKeys.confirm(first.nonce),
      dedupKeys.finish(first.nonce),
    ]);
    const stored = (await t.store.load(ESCROW_ID))!;
    expect(stored.hostSync.get(first.executor)).toBe(first.nonce);
    expect(stored.diffs.map((d) => d.nonce)).toEqual([1n, second.nonce]);
  });
});
