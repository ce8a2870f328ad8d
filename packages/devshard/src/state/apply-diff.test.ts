import { describe, expect, it } from 'vitest';
import { DevshardErrorCode } from '../errors.js';
import { signDiff } from '../signing/diff.js';
import { run } from '../testing/drive.js';
import { confirmTx, finishTx, keyN, makeFixture, startTx, validationTx } from '../testing/session-fixture.js';
import { applyDiff } from './apply-diff.js';
import { composeDiff } from './compose.js';

const none = new Uint8Array(0);

describe('applyDiff, the strict host path (§5.3)', () => {
  it('accepts a diff signed by the creator with a matching post_state_root', () => {
    const f = makeFixture({ tag: 'v5' });
    const composed = composeDiff(f.state, [startTx(1n)]);
    const { state, effects } = applyDiff(f.state, signDiff(f.user, f.escrowId, composed.diff));
    expect(state.root).toEqual(composed.state.root);
    expect(effects.nonce).toBe(1n);
    expect(effects.root).toEqual(state.root);
  });

  it('rejects a signature by anyone else, a host included', () => {
    const f = makeFixture({ tag: 'v5' });
    const diff = { nonce: 1n, txs: [], postStateRoot: none };
    for (const key of [keyN(500), f.hosts[0]!]) {
      expect(() => applyDiff(f.state, signDiff(key, f.escrowId, diff))).toThrow(
        expect.objectContaining({ code: DevshardErrorCode.InvalidUserSignature }),
      );
    }
    // Signed for another escrow.
    expect(() => applyDiff(f.state, signDiff(f.user, 'other', diff))).toThrow(
      expect.objectContaining({ code: DevshardErrorCode.InvalidUserSignature }),
    );
  });

  it('rejects gaps and replays of nonces', () => {
    const f = makeFixture({ tag: 'v5' });
    for (const nonce of [0n, 2n]) {
      expect(() =>
        applyDiff(f.state, signDiff(f.user, f.escrowId, { nonce, txs: [], postStateRoot: none })),
      ).toThrow(expect.objectContaining({ code: DevshardErrorCode.InvalidNonce }));
    }
  });

  it('rejects a post_state_root that differs from the computed root', () => {
    const f = makeFixture({ tag: 'v5' });
    const diff = signDiff(f.user, f.escrowId, { nonce: 1n, txs: [], postStateRoot: new Uint8Array(32) });
    expect(() => applyDiff(f.state, diff)).toThrow(
      expect.objectContaining({ code: DevshardErrorCode.PostStateRootMismatch }),
    );
  });

  it('rejects the whole diff when a later tx fails, and leaves the input state unchanged', () => {
    const f = makeFixture({ tag: 'v5' });
    const s = run(f, [[startTx(1n)], [confirmTx(f, 1n)]]);
    const snapshot = { root: s.root, balance: s.balance, rec: s.inferences.get(1n), stats: s.hostStats };
    const diff = signDiff(f.user, f.escrowId, {
      nonce: 3n,
      txs: [finishTx(f, 1n), validationTx(f, 999n, 0, true)],
      postStateRoot: none,
    });
    expect(() => applyDiff(s, diff)).toThrow(
      expect.objectContaining({ code: DevshardErrorCode.InferenceNotFound }),
    );
    expect({ root: s.root, balance: s.balance, rec: s.inferences.get(1n), stats: s.hostStats }).toEqual(
      snapshot,
    );
    expect(s.latestNonce).toBe(2n);
  });

  it('reports warm-key bindings made by the diff', () => {
    const f = makeFixture({ tag: 'v5' });
    const warm = keyN(700);
    const isWarmKey = (cold: string, signer: string) =>
      cold === f.hosts[1]!.address && signer === warm.address;
    const s = run(f, [[startTx(1n)]]);
    const composed = composeDiff(s, [confirmTx(f, 1n, { signer: warm })], { isWarmKey });
    const { effects } = applyDiff(s, signDiff(f.user, f.escrowId, composed.diff), { isWarmKey });
    expect(effects.warmKeysBound).toEqual([
      { slot: 1, coldAddress: f.hosts[1]!.address, address: warm.address },
    ]);
    expect(composed.effects.warmKeysBound).toEqual(effects.warmKeysBound);
  });
});
