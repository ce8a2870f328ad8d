// The session's nonce ceiling (devshard-protocol.md §7.5): the escrow's max_nonce from its record
// (SessionChainParams.maxNonce), the 20,000 default only while nobody told it, and a ceiling learned
// later (adoptMaxNonce). Sessions start far into their nonces (fastForward), so a run past 20,000
// costs a few inferences, not 20,000.
import { describe, expect, it } from 'vitest';
import { fastForward, request, setup } from '../testing/session-setup.js';
import { SessionErrorCode } from './errors.js';

describe('max_nonce of the session (§7.5)', () => {
  it("serves past nonce 20,000 on its record's max_nonce and refuses new work at the ceiling", async () => {
    const t = setup({ amount: 10n ** 12n, chainParams: { maxNonce: 20_300n } });
    await fastForward(t, 20_080n);
    const s = await t.open();
    expect([s.maxNonce, s.maxNonceKnown, s.workLimit]).toEqual([20_300n, true, 20_100n]);
    while (s.canStartInference) expect((await s.infer(request())).status).toBe('completed');
    expect(s.latestNonce).toBe(20_100n);
    // The last executor applied every diff up to it, strictly, to our root.
    expect(t.net.hostOfSlot(Number(20_100n % 16n)).state.root).toEqual(s.state.root);
    await expect(s.infer(request())).rejects.toMatchObject({ code: SessionErrorCode.NonceLimit });
    expect(s.latestNonce).toBe(20_100n);
    expect(t.net.conflicts).toEqual([]);
  });

  it('stops at the 20,000 default for a record without one, until it adopts the chain value', async () => {
    const t = setup({ amount: 10n ** 12n, maxNonce: 1_000_000n });
    await fastForward(t, 19_795n);
    const s = await t.open({ maxNonce: undefined });
    expect([s.maxNonce, s.maxNonceKnown, s.workLimit]).toEqual([20_000n, false, 19_800n]);
    while (s.canStartInference) await s.infer(request());
    expect(s.latestNonce).toBe(19_800n);
    await expect(s.infer(request())).rejects.toMatchObject({ code: SessionErrorCode.NonceLimit });
    expect(s.adoptMaxNonce(1_000_000n)).toBe(true);
    expect([s.maxNonceKnown, s.workLimit, s.canStartInference]).toEqual([true, 999_800n, true]);
    expect((await s.infer(request())).status).toBe('completed');
    expect(s.latestNonce).toBe(19_801n);
    // A known ceiling is the escrow's for its life: a later read does not move it.
    expect(s.adoptMaxNonce(30_000n)).toBe(false);
    expect(s.maxNonce).toBe(1_000_000n);
  });
});
