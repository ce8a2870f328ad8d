// Diff-level framing (devshard-protocol.md §5.3 steps 2–3), shared by the strict and composer paths.
import { DevshardError, DevshardErrorCode } from '../errors.js';
import type { DevshardTx } from '../proto/devshard-tx.js';
import type { WorkingState } from './types.js';

export function checkNonce(s: WorkingState, nonce: bigint): void {
  const expected = s.latestNonce + 1n;
  if (nonce !== expected)
    throw new DevshardError(DevshardErrorCode.InvalidNonce, `expected ${expected}, got ${nonce}`);
}

/** At most one StartInference, whose id is the nonce; at most one ForceHeightSyncTurn. */
export function checkTxFraming(nonce: bigint, txs: readonly DevshardTx[]): void {
  let starts = 0;
  let forced = 0;
  for (const tx of txs) {
    if (tx.kind === 'startInference') {
      starts++;
      if (tx.msg.inferenceId !== nonce) {
        throw new DevshardError(
          DevshardErrorCode.InvalidInferenceId,
          `inference_id ${tx.msg.inferenceId} != nonce ${nonce}`,
        );
      }
    } else if (tx.kind === 'forceHeightSyncTurn') forced++;
  }
  if (starts > 1) throw new DevshardError(DevshardErrorCode.MultipleStart);
  if (forced > 1) throw new DevshardError(DevshardErrorCode.MultipleForceHeightSyncTurn);
}

/**
 * Host admission limit of §7.5, outside the state machine because max_nonce is a chain parameter:
 * no nonce above max_nonce, and while Active no Start, Timeout, Validation or ValidationVote above
 * max_nonce − (N + 1), which keeps the finalize reserve.
 */
export function checkNonceLimit(
  s: WorkingState,
  nonce: bigint,
  txs: readonly DevshardTx[],
  maxNonce: bigint,
): void {
  if (nonce > maxNonce)
    throw new DevshardError(DevshardErrorCode.NonceLimitExceeded, `nonce ${nonce} > ${maxNonce}`);
  const reserveStart = maxNonce - BigInt(s.group.slots.length + 1);
  if (s.phase !== 0 || nonce <= reserveStart) return;
  for (const tx of txs) {
    if (
      tx.kind === 'startInference' ||
      tx.kind === 'timeoutInference' ||
      tx.kind === 'validation' ||
      tx.kind === 'validationVote'
    ) {
      throw new DevshardError(
        DevshardErrorCode.NonceLimitExceeded,
        `${tx.kind} at ${nonce} in finalize reserve`,
      );
    }
  }
}
