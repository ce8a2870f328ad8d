import { describe, expect, it } from 'vitest';
import { DevshardErrorCode } from '../../errors.js';
import { txOf } from '../../proto/tx-builders.js';
import { expectRejected, run } from '../../testing/drive.js';
import { makeFixture, startTx } from '../../testing/session-fixture.js';
import { InferenceStatus } from '../types.js';

const v5 = (config = {}) => makeFixture({ tag: 'v5', config: { maxTokensFloor: 64n, ...config } });

describe('StartInference (§5.4)', () => {
  it('reserves (input + max_tokens) × price and creates a Pending record on slot id mod N', () => {
    const f = v5({ tokenPrice: 3n });
    const s = run(f, [[startTx(1n, { maxTokens: 64n, inputLength: 36n })]]);
    const rec = s.inferences.get(1n)!;
    expect(rec.status).toBe(InferenceStatus.Pending);
    expect(rec.executorSlot).toBe(1);
    expect(rec.reservedCost).toBe(300n);
    expect(s.balance).toBe(1_000_000n - 300n);
  });

  it('records started_at_height only when the block hash is present (v5)', () => {
    const f = v5();
    const stamped = run(f, [
      [startTx(1n, { maxTokens: 64n, observedHeight: 77n, observedBlockHash: Uint8Array.of(1) })],
    ]);
    expect(stamped.inferences.get(1n)!.startedAtHeight).toBe(77n);
    const unstamped = run(f, [[startTx(1n, { maxTokens: 64n, observedHeight: 77n })]]);
    expect(unstamped.inferences.get(1n)!.startedAtHeight).toBe(0n);
  });

  it('rejects max_tokens below the floor', () => {
    const f = v5();
    expectRejected(f, f.state, [startTx(1n, { maxTokens: 63n })], DevshardErrorCode.MaxTokensBelowFloor);
  });

  it('accepts a below-floor start on replay of a persisted diff', () => {
    const f = v5();
    expect(run(f, [[startTx(1n, { maxTokens: 10n })]], { replay: true }).inferences.size).toBe(1);
  });

  it('rejects a start after finalize', () => {
    const f = v5();
    const s = run(f, [[txOf.finalizeRound()]]);
    expectRejected(f, s, [startTx(2n, { maxTokens: 64n })], DevshardErrorCode.SessionFinalizing);
  });

  it('rejects a reservation above the balance', () => {
    const f = v5({ tokenPrice: 10_000n });
    expectRejected(f, f.state, [startTx(1n, { maxTokens: 64n })], DevshardErrorCode.InsufficientBalance);
  });

  it('rejects a cost that overflows uint64', () => {
    const f = v5({ tokenPrice: 1n << 60n });
    expectRejected(f, f.state, [startTx(1n, { maxTokens: 64n })], DevshardErrorCode.CostOverflow);
    expectRejected(
      makeFixture({ tag: 'v5' }),
      f.state,
      [startTx(1n, { maxTokens: 0xffff_ffff_ffff_ffffn, inputLength: 1n })],
      DevshardErrorCode.CostOverflow,
    );
  });

  it('rejects an inference id other than the nonce, and two starts in one diff', () => {
    const f = v5();
    expectRejected(f, f.state, [startTx(2n, { maxTokens: 64n })], DevshardErrorCode.InvalidInferenceId);
    expectRejected(
      f,
      f.state,
      [startTx(1n, { maxTokens: 64n }), startTx(1n, { maxTokens: 64n })],
      DevshardErrorCode.MultipleStart,
    );
  });
});

describe('StartInference duplicate guard', () => {
  it('rejects an id that is live or was ever started (unreachable through diffs: id = nonce)', async () => {
    const { applyStartInference } = await import('./start-inference.js');
    const { txEnv } = await import('../apply-context.js');
    const { newMsg } = await import('../../proto/tx-builders.js');
    const f = v5();
    const s = run(f, [[startTx(1n, { maxTokens: 64n })]]);
    const msg = newMsg.startInference({ inferenceId: 1n, maxTokens: 64n });
    expect(() => applyStartInference(s, msg, txEnv(1n, {}))).toThrow(
      expect.objectContaining({ code: DevshardErrorCode.DuplicateInferenceId }),
    );
  });
});
