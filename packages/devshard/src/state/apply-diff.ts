// The host (strict) path of devshard-protocol.md §5.3: any failure rejects the whole diff. The input
// state is never modified, so a rejected diff changes nothing.
import { DevshardError, DevshardErrorCode } from '../errors.js';
import { recoverDiffSigner, type SignedDiff } from '../signing/diff.js';
import { type ApplyContext, txEnv } from './apply-context.js';
import { applyTx } from './apply-tx.js';
import { closeDiff } from './close-diff.js';
import { checkNonce, checkTxFraming } from './diff-checks.js';
import { type ApplyResult, newWarmKeys } from './effects.js';
import { checkLogPlane } from './log-plane.js';
import { withRoot } from './root.js';
import type { SessionState, WorkingState } from './types.js';

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** Applies a signed diff as a host does; throws DevshardError (with `code`) on rejection. */
export function applyDiff(state: SessionState, diff: SignedDiff, ctx: ApplyContext = {}): ApplyResult {
  const env = txEnv(diff.nonce, ctx);
  // 1. The escrow creator's signature, no warm keys.
  const signer = recoverDiffSigner(state.escrowId, diff, env.recover);
  if (signer !== state.creator) {
    throw new DevshardError(
      DevshardErrorCode.InvalidUserSignature,
      `expected ${state.creator}, got ${signer}`,
    );
  }
  // 2–4. Nonce, framing, log plane.
  checkNonce(state, diff.nonce);
  const txs = diff.txs.map((t) => t.tx);
  checkTxFraming(diff.nonce, txs);
  checkLogPlane(state, diff.nonce, txs, env);
  // 5. Every tx, in order.
  let s: WorkingState = state;
  for (const tx of txs) s = applyTx(s, tx, env);
  // 6–9.
  const closed = closeDiff(s, diff.nonce, txs);
  // 10. Root, checked against the signed one when present.
  const next = withRoot(closed.state, state);
  if (diff.postStateRoot.length > 0 && !sameBytes(diff.postStateRoot, next.root)) {
    throw new DevshardError(
      DevshardErrorCode.PostStateRootMismatch,
      `diff ${Buffer.from(diff.postStateRoot).toString('hex')}, computed ${Buffer.from(next.root).toString('hex')}`,
    );
  }
  return {
    state: next,
    effects: {
      nonce: diff.nonce,
      root: next.root,
      phase: next.phase,
      warmKeysBound: newWarmKeys(state, next),
      sealed: closed.sealed,
    },
  };
}
