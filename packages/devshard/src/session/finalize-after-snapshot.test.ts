import { describe, expect, it } from 'vitest';
import { SessionPhase } from '../hash/root-formula.js';
import { ESCROW_ID, request, setup } from '../testing/session-setup.js';
import { SessionErrorCode } from './errors.js';

/** In-process hosts answer in microtasks; a macrotask turn between requests stands for real I/O. */
const ioTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('finalize after reopening from a snapshot (§8)', () => {
  it('completes the quorum with the state signatures stored before the reload', async () => {
    const t = setup();
    await t.init();
    const s1 = await t.open({ snapshotEvery: 4 });
    for (let i = 0; i < 6; i++) {
      await s1.infer(request());
      await ioTurn();
    }
    // Hosts 0 and 1 (7 of 16 slots) silent: 9 slots sign, short of ⌊32/3⌋ + 1 = 11.
    const first = [t.net.hostOfSlot(0), t.net.hostOfSlot(1)];
    for (const h of first) h.behaviour.down = true;
    await expect(s1.finalize({ maxRounds: 1 })).rejects.toMatchObject({ code: SessionErrorCode.NoQuorum });
    expect(s1.phase).toBe(SessionPhase.Settlement);
    await s1.close();
    const finalNonce = s1.latestNonce;
    const stored = (await t.store.load(ESCROW_ID))!;
    const F = finalNonce - 16n;
    expect(stored.snapshot!.nonce).toBeGreaterThan(F); // taken while Finalizing or in Settlement
    expect(stored.diffs.length).toBeLessThan(4);

    // Now the hosts that signed before are gone: only 0, 1 and 4 answer (10 slots < 11). The quorum
    // exists only with the signatures of 2 and 3 that the store kept.
    for (const h of first) h.behaviour.down = false;
    const gone = [t.net.hostOfSlot(2), t.net.hostOfSlot(3)];
    for (const h of gone) h.behaviour.down = true;
    t.events.length = 0;
    const s2 = await t.open();
    expect(t.events.filter((e) => e.type === 'snapshot_rejected')).toEqual([]);
    expect(s2.state).toEqual(s1.state);
    const result = await s2.finalize({ maxRounds: 1 });
    expect(result.payload.nonce).toBe(finalNonce);
    expect(result.signatures).toHaveLength(16);
    const signed = new Set(result.signatures.map((x) => x.slotId));
    for (const h of gone) for (const slot of h.slots) expect(signed.has(slot)).toBe(true);
    expect((await t.store.load(ESCROW_ID))!.lastNonce).toBe(finalNonce); // no new diffs
    expect(t.net.conflicts).toEqual([]);
  });
});
