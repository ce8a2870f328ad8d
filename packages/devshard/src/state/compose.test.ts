import { describe, expect, it } from 'vitest';
import { DevshardErrorCode } from '../errors.js';
import { txOf } from '../proto/tx-builders.js';
import { TimeoutReason } from '../proto/tx-messages.js';
import { signDiff } from '../signing/diff.js';
import { run } from '../testing/drive.js';
import { confirmTx, finishTx, keyN, makeFixture, startTx, timeoutTx } from '../testing/session-fixture.js';
import { applyDiff } from './apply-diff.js';
import { composeDiff } from './compose.js';

describe('composeDiff, the best-effort gateway path (§5.3)', () => {
  it('drops failing non-Start candidates and signs over what was applied', () => {
    const f = makeFixture({ tag: 'v5' });
    const s = run(f, [[startTx(1n)]]);
    const stale = finishTx(f, 1n); // not confirmed yet
    const composed = composeDiff(s, [stale, confirmTx(f, 1n), startTx(2n)]);
    expect(composed.diff.txs.map((t) => t.tx.kind)).toEqual(['confirmStart', 'startInference']);
    expect(composed.dropped).toHaveLength(1);
    expect(composed.dropped[0]!.error.code).toBe(DevshardErrorCode.InvalidTransition);
    expect(composed.dropped[0]!.tx).toBe(stale);
    const host = applyDiff(s, signDiff(f.user, f.escrowId, composed.diff));
    expect(host.state.root).toEqual(composed.state.root);
  });

  it('aborts on a failing Start without consuming the nonce', () => {
    const f = makeFixture({ tag: 'v5', config: { maxTokensFloor: 64n } });
    expect(() => composeDiff(f.state, [confirmTx(f, 9n), startTx(1n, { maxTokens: 1n })])).toThrow(
      expect.objectContaining({ code: DevshardErrorCode.MaxTokensBelowFloor }),
    );
    expect(f.state.latestNonce).toBe(0n);
    expect(composeDiff(f.state, []).diff.nonce).toBe(1n);
  });

  it('aborts when the per-nonce fee cannot be paid', () => {
    const f = makeFixture({ tag: 'v5', amount: 1_500n, config: { feePerNonce: 1_000n } });
    const s = run(f, [[]]);
    expect(s.balance).toBe(500n);
    expect(() => composeDiff(s, [])).toThrow(
      expect.objectContaining({ code: DevshardErrorCode.InsufficientBalance }),
    );
    // Finalizing diffs are free.
    expect(composeDiff(s, [txOf.finalizeRound()]).state.balance).toBe(500n);
  });

  it('undoes everything a dropped tx did, warm-key bindings included', () => {
    const f = makeFixture({ tag: 'v5' });
    const warm = keyN(800);
    const isWarmKey = (cold: string, signer: string) =>
      cold === f.hosts[0]!.address && signer === warm.address;
    const s = run(f, [[startTx(1n)]]);
    // Vote 1 (slot 0, warm key) verifies and would bind; vote 2 is forged: the timeout is dropped.
    const timeout = timeoutTx(f, 1n, TimeoutReason.Refused, [
      { slot: 0, signer: warm },
      { slot: 2, signer: keyN(801) },
    ]);
    const composed = composeDiff(s, [timeout], { isWarmKey });
    expect(composed.dropped[0]!.error.code).toBe(DevshardErrorCode.InvalidVoteSig);
    expect(composed.state.warmKeys.size).toBe(0);
    expect(composed.effects.warmKeysBound).toEqual([]);
    const host = applyDiff(s, signDiff(f.user, f.escrowId, composed.diff), { isWarmKey });
    expect(host.state.root).toEqual(composed.state.root);
  });

  it('can leave post_state_root out (§12 #1 calibration)', () => {
    const f = makeFixture({ tag: 'v5' });
    const composed = composeDiff(f.state, [], {}, { withPostStateRoot: false });
    expect(composed.diff.postStateRoot).toHaveLength(0);
    expect(applyDiff(f.state, signDiff(f.user, f.escrowId, composed.diff)).state.root).toEqual(
      composed.state.root,
    );
  });
});
