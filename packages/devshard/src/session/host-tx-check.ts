// Admission of host-proposed txs into the pending queue (devshard-protocol.md §7.1 last paragraph,
// §7.2 step 5, §10.2): only the accepted mempool kinds, and only when the tx can still apply to our
// state and its signature verifies for its slot. Checking before queuing matters because the queue
// deduplicates by key: a forged Finish queued first would shadow the executor's real one. The rules
// are the state machine's own (same signature helpers, same warm-key rule); with a memoized recover
// the composer's later check of the same signature is a cache hit.
import type { DevshardTx } from '../proto/devshard-tx.js';
import type {
  MsgConfirmStart,
  MsgFinishInference,
  MsgValidation,
  MsgValidationVote,
} from '../proto/tx-messages.js';
import {
  recoverFinishProposer,
  validationProposerBytes,
  validationVoteProposerBytes,
} from '../signing/proposer.js';
import type { TxEnv } from '../state/apply-context.js';
import { authorizeSlotSigner } from '../state/authorize.js';
import { isAcceptedMempoolTx } from '../state/candidates.js';
import { hasSlotBit } from '../state/record.js';
import { authorizeConfirmReceipt } from '../state/tx/confirm-start.js';
import { InferenceStatus, type SessionState } from '../state/types.js';
import { verifyStyledSlotSignature } from '../state/vote-style.js';

/** Why a host tx was not queued; undefined when it was admitted. */
export type RejectReason =
  | 'kind'
  | 'not_live'
  | 'wrong_status'
  | 'wrong_slot'
  | 'wrong_escrow'
  | 'already_done'
  | 'bad_signature';

function addressHasBit(s: SessionState, mask: bigint, address: string): boolean {
  return (s.group.slotsOf.get(address) ?? []).some((slot) => hasSlotBit(mask, slot));
}

function checkConfirm(s: SessionState, msg: MsgConfirmStart, env: TxEnv): RejectReason | undefined {
  const rec = s.inferences.get(msg.inferenceId);
  if (!rec) return 'not_live';
  if (rec.status !== InferenceStatus.Pending) return 'wrong_status';
  return authorizeConfirmReceipt(s, rec, msg, env) ? undefined : 'bad_signature';
}

function checkFinish(s: SessionState, msg: MsgFinishInference, env: TxEnv): RejectReason | undefined {
  const rec = s.inferences.get(msg.inferenceId);
  if (!rec) return 'not_live';
  // Pending is allowed: its Confirm may be in the queue or arrive before the next diff.
  if (rec.status !== InferenceStatus.Pending && rec.status !== InferenceStatus.Started) return 'wrong_status';
  if (msg.executorSlot !== rec.executorSlot) return 'wrong_slot';
  if (msg.escrowId !== s.escrowId) return 'wrong_escrow';
  const signer = recoverFinishProposer(msg, env.recover);
  return authorizeSlotSigner(s, msg.executorSlot, signer, env) ? undefined : 'bad_signature';
}

function checkValidation(s: SessionState, msg: MsgValidation, env: TxEnv): RejectReason | undefined {
  const rec = s.inferences.get(msg.inferenceId);
  if (!rec) return 'not_live';
  const address = s.group.slots[msg.validatorSlot];
  if (address === undefined || msg.validatorSlot === rec.executorSlot) return 'wrong_slot';
  if (msg.escrowId !== s.escrowId) return 'wrong_escrow';
  if (addressHasBit(s, rec.validatedBy, address)) return 'already_done';
  const ok = verifyStyledSlotSignature(
    s,
    msg.validatorSlot,
    (style) => validationProposerBytes(msg, style),
    msg.proposerSig,
    env,
  );
  return ok ? undefined : 'bad_signature';
}

function checkVote(s: SessionState, msg: MsgValidationVote, env: TxEnv): RejectReason | undefined {
  const rec = s.inferences.get(msg.inferenceId);
  if (!rec) return 'not_live';
  const address = s.group.slots[msg.voterSlot];
  if (address === undefined) return 'wrong_slot';
  if (msg.escrowId !== s.escrowId) return 'wrong_escrow';
  if (rec.status === InferenceStatus.Validated || rec.status === InferenceStatus.Invalidated)
    return 'already_done';
  if (addressHasBit(s, rec.validatedBy, address)) return 'already_done';
  const ok = verifyStyledSlotSignature(
    s,
    msg.voterSlot,
    (style) => validationVoteProposerBytes(msg, style),
    msg.proposerSig,
    env,
  );
  return ok ? undefined : 'bad_signature';
}

/**
 * Whether a host-proposed tx may join the queue. HeightAcks are refused too: they only apply after a
 * heartbeat, which this gateway never sends (§9), so the composer would always drop them.
 */
export function checkHostTx(s: SessionState, tx: DevshardTx, env: TxEnv): RejectReason | undefined {
  if (!isAcceptedMempoolTx(tx)) return 'kind';
  switch (tx.kind) {
    case 'confirmStart':
      return checkConfirm(s, tx.msg, env);
    case 'finishInference':
      return checkFinish(s, tx.msg, env);
    case 'validation':
      return checkValidation(s, tx.msg, env);
    case 'validationVote':
      return checkVote(s, tx.msg, env);
    default:
      return 'kind';
  }
}
