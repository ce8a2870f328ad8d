import { describe, expect, it } from 'vitest';
import { DevshardErrorCode } from '../../errors.js';
import { expectRejected, run } from '../../testing/drive.js';
import { confirmTx, finishTx, makeFixture, startTx } from '../../testing/session-fixture.js';
import { InferenceStatus } from '../types.js';

function started(tag = 'v5') {
  const f = makeFixture({ tag, config: { tokenPrice: 2n } });
  return { f, s: run(f, [[startTx(1n)], [confirmTx(f, 1n)]]) };
}

describe('FinishInference (§5.4)', () => {
  it('pays min(tokens × price, reserved) and releases the surplus', () => {
    const { f, s } = started();
    const done = run(f, [[finishTx(f, 1n, { inputTokens: 30n, outputTokens: 20n })]], {}, s);
    const rec = done.inferences.get(1n)!;
    expect(rec.status).toBe(InferenceStatus.Finished);
    expect(rec.actualCost).toBe(100n);
    expect(done.hostStats[1]!.cost).toBe(100n);
    expect(done.balance).toBe(1_000_000n - 100n);
  });

  it('clamps an actual cost above the reservation in v5', () => {
    const { f, s } = started();
    const done = run(f, [[finishTx(f, 1n, { inputTokens: 1000n })]], {}, s);
    expect(done.inferences.get(1n)!.actualCost).toBe(300n);
    expect(done.balance).toBe(1_000_000n - 300n);
  });

  it('rejects an actual cost above the reservation in v4', () => {
    const { f, s } = started('v4.1');
    expectRejected(
      f,
      s,
      [finishTx(f, 1n, { inputTokens: 1000n })],
      DevshardErrorCode.ActualCostExceedsReserved,
    );
  });

  it('rejects a finish before confirm, for an unknown id, twice', () => {
    const f = makeFixture({ tag: 'v5' });
    const pending = run(f, [[startTx(1n)]]);
    expectRejected(f, pending, [finishTx(f, 1n)], DevshardErrorCode.InvalidTransition);
    expectRejected(f, pending, [finishTx(f, 2n)], DevshardErrorCode.InferenceNotFound);
    const { f: g, s } = started();
    const done = run(g, [[finishTx(g, 1n)]], {}, s);
    expectRejected(g, done, [finishTx(g, 1n)], DevshardErrorCode.InvalidTransition);
  });

  it('rejects another executor slot, a foreign signer and another escrow', () => {
    const { f, s } = started();
    expectRejected(f, s, [finishTx(f, 1n, { slot: 2 })], DevshardErrorCode.WrongExecutorSlot);
    expectRejected(f, s, [finishTx(f, 1n, { signer: f.hosts[3] })], DevshardErrorCode.InvalidProposerSig);
    expectRejected(f, s, [finishTx(f, 1n, { escrowId: 'other' })], DevshardErrorCode.EscrowIdMismatch);
  });
});
