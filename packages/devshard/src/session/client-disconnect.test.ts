import { describe, expect, it } from 'vitest';
import { ESCROW_ID, request, setup } from '../testing/session-setup.js';
import { wrapStore } from '../testing/wrap-store.js';
import { SessionErrorCode } from './errors.js';
import { InferenceCut, type InferenceHandlers } from './inference.js';

/** Handlers that record what reached the client. */
function client(signal?: AbortSignal) {
  const seen: string[] = [];
  const handlers: InferenceHandlers = {
    onReceipt: () => seen.push('receipt'),
    onChunk: () => seen.push('chunk'),
    onDone: () => seen.push('done'),
    ...(signal ? { signal } : {}),
  };
  return { seen, handlers };
}

describe('a client that goes away (architecture §5)', () => {
  it('before its diff is composed: no nonce is taken', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    const gone = new AbortController();
    gone.abort();
    await expect(s.infer(request(), client(gone.signal).handlers)).rejects.toMatchObject({
      code: SessionErrorCode.ClientAborted,
    });
    expect(s.latestNonce).toBe(0n);
    expect(t.net.calls).toHaveLength(0);
    expect(s.fault).toBeUndefined();
  });

  it('while waiting for the compose lock: no nonce is taken', async () => {
    const t = setup();
    await t.init();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let first = true;
    const slow = wrapStore(t.store, {
      appendDiff: async (id, d, token, writes) => {
        if (first) {
          first = false;
          await gate;
        }
        return t.store.appendDiff(id, d, token, writes);
      },
    });
    const s = await t.open({ store: slow });
    const holding = s.infer(request());
    const gone = new AbortController();
    const waiting = s.infer(request(), client(gone.signal).handlers);
    gone.abort();
    release();
    expect(await holding).toMatchObject({ nonce: 1n, status: 'completed' });
    await expect(waiting).rejects.toMatchObject({ code: SessionErrorCode.ClientAborted });
    expect((await t.store.load(ESCROW_ID))!.lastNonce).toBe(1n);
  });

  it('after its diff is composed: the diff is still sent and the Finish folded in, nothing reaches the client', async () => {
    const t = setup();
    await t.init();
    const gone = new AbortController();
    const aborting = wrapStore(t.store, {
      appendDiff: async (id, d, token, writes) => {
        await t.store.appendDiff(id, d, token, writes);
        gone.abort(); // the client leaves right after the write-ahead
      },
    });
    const s = await t.open({ store: aborting });
    const c = client(gone.signal);
    const r = await s.infer(request(), c.handlers);
    // The frames were still read and hashed (served-bytes.ts): the verdict is the host's, not the client's.
    expect(r).toMatchObject({
      nonce: 1n,
      confirmed: true,
      finished: true,
      clientGone: true,
      served: 'match',
    });
    expect(t.net.calls.filter((x) => x.payload && x.nonce === 1n)).toHaveLength(1);
    expect(c.seen).toEqual([]);
  });

  it('after the receipt: chunks stop, the host stream is read to its meta event', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    const gone = new AbortController();
    const c = client(gone.signal);
    const r = await s.infer(request(), {
      ...c.handlers,
      onReceipt: () => {
        c.seen.push('receipt');
        gone.abort();
      },
    });
    expect(c.seen).toEqual(['receipt']);
    expect(r).toMatchObject({
      status: 'completed',
      confirmed: true,
      finished: true,
      clientGone: true,
      served: 'match',
    });
    expect((await t.store.load(ESCROW_ID))!.pendingTxs.map((p) => p.key).sort()).toEqual([
      'confirm:1',
      'finish:1',
    ]);
  });

  it('after the receipt, a host that never sends its meta: the tail is bounded, then the mempool is asked', async () => {
    const t = setup();
    await t.init();
    const s = await t.open({ disconnectTailMs: 20 });
    t.net.hostOfSlot(1).behaviour.hangBeforeMeta = true;
    const gone = new AbortController();
    const r = await s.infer(request(), { onReceipt: () => gone.abort(), signal: gone.signal });
    expect(r).toMatchObject({ nonce: 1n, confirmed: true, finished: true, clientGone: true });
    expect(r.error).toMatchObject({ code: 'aborted' }); // the tail was cut, not the client's doing
    // A stream we cut ourselves proves nothing about the host: no served-bytes verdict, no count.
    expect(r.served).toBeUndefined();
    expect(s.servedCounts().size).toBe(0);
    expect(s.fault).toBeUndefined();
  });

  it('a request its owner cuts (InferenceCut): the host stream is cancelled at once, without the tail', async () => {
    const t = setup();
    await t.init();
    // A tail this long would outlast the test: the cut must not wait for it.
    const s = await t.open({ disconnectTailMs: 600_000 });
    t.net.hostOfSlot(1).behaviour.hangBeforeMeta = true;
    const owner = new AbortController();
    const r = await s.infer(request(), {
      onReceipt: () => owner.abort(new InferenceCut('settle_forced')),
      signal: owner.signal,
    });
    expect(r).toMatchObject({ nonce: 1n, confirmed: true, finished: true, clientGone: true });
    expect(r.served).toBeUndefined();
    expect(s.fault).toBeUndefined();
  });
});
