import { describe, expect, it } from 'vitest';
import { ESCROW_ID, request, setup } from '../testing/session-setup.js';
import { SessionErrorCode } from './errors.js';

describe('breakers: the session stops composing, nothing is rolled back', () => {
  it('faults once when every reachable host rejects a fresh diff', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    await s.infer(request());
    for (const h of t.net.hosts.values()) h.behaviour.rejectDiffs = true;
    t.net.hostOfSlot(3).behaviour.down = true; // unreachable hosts do not count either way
    const r = await s.infer(request());
    expect(r).toMatchObject({ nonce: 2n, status: 'failed', error: { code: 'apply_failed' } });
    expect(s.fault?.code).toBe(SessionErrorCode.DiffRejected);
    expect(t.events.filter((e) => e.type === 'faulted')).toEqual([{ type: 'faulted', error: s.fault }]);
    await expect(s.infer(request())).rejects.toMatchObject({ code: SessionErrorCode.DiffRejected });
    await expect(s.flush()).rejects.toMatchObject({ code: SessionErrorCode.DiffRejected });
    // The signed nonce stays spent and stored: no rollback, no second diff for it.
    expect(s.latestNonce).toBe(2n);
    expect((await t.store.load(ESCROW_ID))!.lastNonce).toBe(2n);
    expect(t.events.filter((e) => e.type === 'faulted')).toHaveLength(1);
  });

  it('a single host rejecting is a host fault: another host takes the diff and the session goes on', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    t.net.hostOfSlot(1).behaviour.rejectDiffs = true;
    const r = await s.infer(request());
    expect(r).toMatchObject({ nonce: 1n, status: 'failed' });
    expect(s.fault).toBeUndefined();
    expect(await s.infer(request())).toMatchObject({ nonce: 2n, status: 'completed' });
    expect(t.events.filter((e) => e.type === 'faulted')).toEqual([]);
  });
});
