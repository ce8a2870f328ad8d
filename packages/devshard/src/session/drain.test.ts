import { describe, expect, it } from 'vitest';
import { ESCROW_ID, request, setup } from '../testing/session-setup.js';
import { SessionErrorCode } from './errors.js';

/** Lets queued callbacks and I/O run (no timing involved). */
const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe('drain and close (architecture §2.6)', () => {
  it('close waits for an in-flight request, its meta tail and its store writes; new work is refused', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    await s.infer(request()); // nonce 1
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let received!: () => void;
    const receipt = new Promise<void>((resolve) => (received = resolve));
    t.net.hostOfSlot(2).behaviour.hold = (type, nonce) =>
      type === 'meta' && nonce === 2n ? gate : undefined;
    const inflight = s.infer(request(), { onReceipt: () => received() });
    await receipt;
    let closed = false;
    const closing = s.close().then(() => {
      closed = true;
    });
    await settle();
    expect(closed).toBe(false);
    await expect(s.infer(request())).rejects.toMatchObject({ code: SessionErrorCode.Draining });
    await expect(s.flush()).rejects.toMatchObject({ code: SessionErrorCode.Draining });
    release();
    await closing;
    // By the time close resolved, the request had its Finish and the store had it too.
    expect(await inflight).toMatchObject({ nonce: 2n, status: 'completed', finished: true });
    expect((await t.store.load(ESCROW_ID))!.pendingTxs.map((p) => p.key)).toContain('finish:2');
    expect(s.fault?.code).toBe(SessionErrorCode.Closed);
    expect(s.latestNonce).toBe(2n);
  });

  it('drain is idempotent and leaves the session readable, without a fault', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    await s.infer(request());
    await Promise.all([s.drain(), s.drain()]);
    await s.drain();
    expect(s.fault).toBeUndefined();
    expect(s.canStartInference).toBe(false);
    await expect(s.infer(request())).rejects.toMatchObject({ code: SessionErrorCode.Draining });
    expect(s.latestNonce).toBe(1n);
  });
});
