import { describe, expect, it } from 'vitest';
import { ESCROW_ID, request, setup } from '../testing/session-setup.js';
import { SessionErrorCode } from './errors.js';
import type { SessionEvent } from './session-context.js';

const faults = (events: readonly SessionEvent[]) => events.filter((e) => e.type === 'faulted');

describe('ownership: write guard, fencing and what a fenced owner reports (architecture §2.1)', () => {
  it('runs the write guard before the write-ahead: a refusing guard faults with ownership_lost, nothing stored or sent', async () => {
    const t = setup();
    await t.init();
    let lease = true;
    const s = await t.open({
      writeGuard: () => {
        if (!lease) throw new Error('lease about to expire');
      },
    });
    await s.infer(request());
    lease = false;
    const calls = t.net.calls.length;
    await expect(s.infer(request())).rejects.toMatchObject({ code: SessionErrorCode.OwnershipLost });
    expect(t.net.calls.length).toBe(calls);
    expect((await t.store.load(ESCROW_ID))!.lastNonce).toBe(1n);
    expect(s.fault?.code).toBe(SessionErrorCode.OwnershipLost);
    await expect(s.flush()).rejects.toMatchObject({ code: SessionErrorCode.OwnershipLost });
    expect(faults(t.events)).toEqual([{ type: 'faulted', error: s.fault }]);
  });

  it('faults with ownership_lost when the guard refuses a pending-tx write mid-request', async () => {
    const t = setup();
    await t.init();
    let lease = true;
    const s = await t.open({
      writeGuard: () => {
        if (!lease) throw new Error('lease lost');
      },
    });
    t.net.onChat = () => {
      lease = false; // after the write-ahead, before the receipt's Confirm is saved
    };
    const r = await s.infer(request());
    expect(r.status).toBe('completed'); // the nonce was spent; the stream was read
    expect(s.fault?.code).toBe(SessionErrorCode.OwnershipLost);
    expect((await t.store.load(ESCROW_ID))!.pendingTxs).toEqual([]);
    expect(faults(t.events)).toHaveLength(1);
  });

  it('a fenced owner that meets a host ahead of its log reports ownership_lost, not divergence', async () => {
    const t = setup();
    await t.init();
    const a = await t.open();
    await a.infer(request()); // nonce 1
    let took = false;
    t.net.onChat = async (_host, req) => {
      if (took || req.nonce !== 2n || !req.payload) return;
      took = true;
      // A's nonce 2 is stored but not sent yet: B takes over and serves nonces 3…7; 7 goes to
      // slot 7's host, the same host as A's nonce 2 (slot s → host s mod 5), which is then at 7.
      const b = await t.open();
      for (let i = 0; i < 5; i++) await b.infer(request());
      expect(b.latestNonce).toBe(7n);
    };
    const r = await a.infer(request());
    expect(r.nonce).toBe(2n);
    expect(a.fault?.code).toBe(SessionErrorCode.OwnershipLost);
    expect(t.events.filter((e) => e.type === 'divergence')).toEqual([]);
    expect(faults(t.events).map((e) => e.type === 'faulted' && e.error.code)).toEqual([
      SessionErrorCode.OwnershipLost,
    ]);
    expect(t.net.conflicts).toEqual([]);
  });

  it('a writer that is still the owner reports a real divergence once', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    t.net.hostOfSlot(1).behaviour.wrongStateHash = true;
    await s.infer(request());
    expect(s.fault?.code).toBe(SessionErrorCode.Diverged);
    expect(t.events.filter((e) => e.type === 'divergence')).toHaveLength(1);
    await expect(s.infer(request())).rejects.toMatchObject({ code: SessionErrorCode.Diverged });
    expect(s.latestNonce).toBe(1n); // no further nonce composed
    expect(faults(t.events)).toHaveLength(1);
  });
});
