// §12 #1: a root mismatch on the first height-stamped diff, before any host agreed with such a root,
// stops the session with `stamp_layout_mismatch` (visible to the owner), not a silent halt; the same
// mismatch once calibrated is a plain divergence.
import { describe, expect, it } from 'vitest';
import { request, setup } from '../testing/session-setup.js';
import { SessionErrorCode } from './errors.js';

describe('v5 height stamps before calibration (§12 #1)', () => {
  it('faults the session cleanly when a host disagrees at the first stamped Confirm', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    // Nonce 1's executor stamps its receipt: the Confirm it yields is height-stamped.
    t.net.hostOfSlot(1).behaviour.stampHeight = 1_234_567n;
    const first = await s.infer(request());
    expect(first).toMatchObject({ nonce: 1n, confirmed: true });
    // Nonce 2 carries that Confirm; its executor's root differs (as if it numbered fields 18/19 otherwise).
    t.net.hostOfSlot(2).behaviour.wrongStateHash = true;
    await s.infer(request());
    expect(s.fault?.code).toBe(SessionErrorCode.StampLayoutMismatch);
    expect(s.fault?.message).toContain('§12 #1');
    expect(t.events.some((e) => e.type === 'divergence' && e.nonce === 2n)).toBe(true);
    await expect(s.infer(request())).rejects.toMatchObject({ code: SessionErrorCode.StampLayoutMismatch });
  });

  it('after a host confirmed a stamped root, a mismatch is a divergence', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    t.net.hostOfSlot(1).behaviour.stampHeight = 99n;
    await s.infer(request());
    await s.infer(request()); // nonce 2 (stamped Confirm): host 2 agrees, the root is calibrated
    t.net.hostOfSlot(3).behaviour.wrongStateHash = true;
    await s.infer(request());
    expect(s.fault?.code).toBe(SessionErrorCode.Diverged);
  });
});
