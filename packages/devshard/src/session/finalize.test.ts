import { describe, expect, it } from 'vitest';
import { SessionPhase, settlementStateRoot } from '../hash/root-formula.js';
import { parseFinalizeDocument } from '../settlement/document.js';
import { hasSettlementQuorum } from '../settlement/quorum.js';
import { recoverStateSigner } from '../signing/state-signature.js';
import { ESCROW_ID, keyN, request, setup } from '../testing/session-setup.js';
import { wrapStore } from '../testing/wrap-store.js';
import { SessionErrorCode } from './errors.js';

async function storedDiffs(t: ReturnType<typeof setup>) {
  return (await t.store.load(ESCROW_ID))!.diffs;
}

describe('finalize (§8)', () => {
  it('brings every host to the final nonce, also hosts the slot quorum did not need', async () => {
    // Host 1 holds 12 of 16 slots, a quorum alone; hosts 2 and 3 hold slots 1, 6 and 2, 7. Their last
    // rounds (§8.1: round r goes to host r mod N) come before F + N, and collection stops at the
    // quorum, so they used to stay Finalizing a few nonces behind.
    const [a, b, c] = [keyN(1).address, keyN(2).address, keyN(3).address];
    const slots = Array.from({ length: 16 }, (_, s) => (s === 1 || s === 6 ? b : s === 2 || s === 7 ? c : a));
    const t = setup({ hosts: 3, row: { slots } });
    await t.init();
    const s = await t.open();
    for (let i = 0; i < 3; i++) await s.infer(request());
    await s.finalize();
    expect(s.phase).toBe(SessionPhase.Settlement);
    expect([b, c].map((h) => s.hostSyncNonce(h))).toEqual([s.latestNonce, s.latestNonce]);
    expect(t.net.allAt(s.state)).toBe(true);
    expect(t.net.settled()).toBe(true);
  });

  it('runs N + 1 rounds, collects a slot quorum and stores a self-consistent document', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    for (let i = 0; i < 10; i++) await s.infer(request());
    const result = await s.finalize();

    const diffs = await storedDiffs(t);
    const F = diffs.find((d) => d.diff.txs.some((x) => x.tx.kind === 'finalizeRound'))!.nonce;
    expect(F).toBe(11n); // round 0 also carried the last Confirm and Finish
    expect(diffs.at(-1)!.nonce).toBe(F + 16n);
    expect(s.phase).toBe(SessionPhase.Settlement);
    const { payload, signatures, document } = result;
    expect(payload.nonce).toBe(F + 16n);
    // The FinalizeRound diff and every later one are fee-free (§5.5).
    expect(payload.fees).toBe(10_000n + 1_000n * (F - 1n));
    expect(document.fees).toBe(payload.fees);
    expect(Object.keys(document)).toEqual([
      'escrow_id',
      'version',
      'state_root',
      'nonce',
      'fees',
      'rest_hash',
      'host_stats',
      'signatures',
    ]);
    expect(document.host_stats).toHaveLength(16);
    expect(settlementStateRoot(payload)).toEqual(payload.stateRoot);
    expect(payload.stateRoot).toEqual(s.state.root);
    // One entry per slot; each recovers to its slot's address over the final root.
    expect(new Set(signatures.map((x) => x.slotId)).size).toBe(signatures.length);
    expect(signatures.length).toBeGreaterThanOrEqual(11);
    for (const { slotId, signature } of signatures) {
      expect(recoverStateSigner(payload.stateRoot, ESCROW_ID, payload.nonce, signature)).toBe(
        s.state.group.slots[slotId],
      );
    }
    expect(hasSettlementQuorum(s.state, signatures)).toBe(true);
    // Refund = final balance: payout is Σcost + fees when every slot is listed.
    const payout = payload.hostStats.reduce((a, h) => a + h.cost, 0n) + payload.fees;
    expect(50_000_000n - payout).toBe(s.balance);
    expect((await t.store.load(ESCROW_ID))!.finalizeDocument).toBe(result.json);
    expect(parseFinalizeDocument(result.json).document).toEqual(document);
    expect(t.net.conflicts).toEqual([]);
  });

  it('reaches quorum with one host down, skipping its rounds', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    for (let i = 0; i < 6; i++) await s.infer(request());
    const down = t.net.hostOfSlot(0); // 4 of 16 slots
    down.behaviour.down = true;
    const result = await s.finalize({ maxRounds: 3 });
    expect(result.signatures.map((x) => x.slotId).sort((a, b) => a - b)).toEqual(
      [...Array(16).keys()].filter((slot) => !down.slots.includes(slot)),
    );
    expect(result.payload.nonce).toBe(s.latestNonce);
  });

  it('returns the same document again without new diffs, also after a reload', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    for (let i = 0; i < 3; i++) await s.infer(request());
    const first = await s.finalize();
    const count = (await storedDiffs(t)).length;
    const calls = t.net.calls.length;
    const second = await s.finalize();
    expect(second.json).toBe(first.json);
    const reopened = await t.open();
    expect((await reopened.finalize()).json).toBe(first.json);
    expect((await storedDiffs(t)).length).toBe(count);
    expect(t.net.calls.length).toBe(calls);
  });

  it('in Settlement without quorum only collects signatures', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    for (let i = 0; i < 4; i++) await s.infer(request());
    // 4 + 3 slots silent: 9 < 11.
    const silent = [t.net.hostOfSlot(0), t.net.hostOfSlot(1)];
    for (const h of silent) h.behaviour.down = true;
    await expect(s.finalize({ maxRounds: 2 })).rejects.toMatchObject({ code: SessionErrorCode.NoQuorum });
    expect(s.phase).toBe(SessionPhase.Settlement);
    const count = (await storedDiffs(t)).length;
    for (const h of silent) h.behaviour.down = false;
    const reopened = await t.open();
    const result = await reopened.finalize();
    expect((await storedDiffs(t)).length).toBe(count); // no new diffs
    expect(result.signatures).toHaveLength(16);
    // The silent hosts were brought to the final nonce by catch-up to get their signatures.
    for (const h of silent) expect(h.state.phase).toBe(SessionPhase.Settlement);
  });

  it('resumes its rounds after a crash mid-finalize', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    for (let i = 0; i < 5; i++) await s.infer(request());
    const crashAt = s.latestNonce + 6n;
    const crashing = wrapStore(t.store, {
      appendDiff: async (id, d, token) => {
        if (d.nonce === crashAt) throw new Error('process killed');
        return t.store.appendDiff(id, d, token);
      },
    });
    const s1 = await t.open({ store: crashing });
    await expect(s1.finalize()).rejects.toMatchObject({ code: SessionErrorCode.WriteFailed });
    expect(s1.phase).toBe(SessionPhase.Finalizing);
    const s2 = await t.open();
    await expect(s2.infer(request())).rejects.toMatchObject({ code: SessionErrorCode.NotActive });
    const result = await s2.finalize();
    const F = (await storedDiffs(t)).find((d) =>
      d.diff.txs.some((x) => x.tx.kind === 'finalizeRound'),
    )!.nonce;
    expect(result.payload.nonce).toBe(F + 16n);
    expect(t.net.conflicts).toEqual([]);
  });

  it('refuses to start while an inference is in flight', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    const running = s.infer(request());
    await expect(s.finalize()).rejects.toMatchObject({ code: SessionErrorCode.InferenceInFlight });
    await running;
    expect((await s.finalize()).payload.nonce).toBe(s.latestNonce);
  });
});
