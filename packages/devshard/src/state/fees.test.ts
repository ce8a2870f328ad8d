import { describe, expect, it } from 'vitest';
import { txOf } from '../proto/tx-builders.js';
import { run } from '../testing/drive.js';
import { confirmTx, finishTx, makeFixture, startTx } from '../testing/session-fixture.js';

describe('fees (§5.5)', () => {
  it('fees = create fee + fee_per_nonce × diffs applied while Active after their txs', () => {
    const f = makeFixture({
      tag: 'v5',
      amount: 100_000n,
      config: { createDevshardFee: 10_000n, feePerNonce: 1_000n },
    });
    expect(f.state.fees).toBe(10_000n);
    expect(f.state.balance).toBe(90_000n);
    const s = run(f, [
      [startTx(1n)],
      [confirmTx(f, 1n)],
      [finishTx(f, 1n)],
      [],
      [txOf.finalizeRound()], // free: Finalizing after its txs
      [],
      [],
      [],
      [],
      [],
    ]);
    expect(s.phase).toBe(2);
    expect(s.fees).toBe(10_000n + 4n * 1_000n);
    // Everything is accounted for: amount = balance + fees + Σ host cost.
    const cost = s.hostStats.reduce((a, h) => a + h.cost, 0n);
    expect(s.balance + s.fees + cost).toBe(100_000n);
  });

  it('refuses to create a session whose amount does not cover the create fee', () => {
    expect(() => makeFixture({ tag: 'v5', amount: 9_999n, config: { createDevshardFee: 10_000n } })).toThrow(
      expect.objectContaining({ code: 'insufficient balance' }),
    );
  });
});
