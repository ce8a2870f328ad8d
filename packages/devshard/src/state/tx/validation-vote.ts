// ValidationVote (devshard-protocol.md §5.4): votes on a Challenged inference. Invalid weight above
// the threshold invalidates (executor invalid += 1, payment refunded to the balance); valid weight
// above it validates. Votes on an already resolved record are no-ops.
import { DevshardError, DevshardErrorCode } from '../../errors.js';
import type { MsgValidationVote } from '../../proto/tx-messages.js';
import { validationVoteProposerBytes } from '../../signing/proposer.js';
import type { TxEnv } from '../apply-context.js';
import { hasSlotBit, updateRecord, withSlotBit } from '../record.js';
import { InferenceStatus, type WorkingState } from '../types.js';
import { verifyStyledSlotSignature } from '../vote-style.js';
import {
  costWithout,
  liveRecordForValidation,
  requireEscrowId,
  slotAddress,
  withHostStats,
  withRecord,
} from './common.js';

export function applyValidationVote(s: WorkingState, msg: MsgValidationVote, env: TxEnv): WorkingState {
  const rec = liveRecordForValidation(s, msg.inferenceId);
  const address = slotAddress(s, msg.voterSlot);
  if (rec.status === InferenceStatus.Validated || rec.status === InferenceStatus.Invalidated) return s;
  if (rec.status !== InferenceStatus.Challenged) {
    throw new DevshardError(DevshardErrorCode.InvalidTransition, `expected challenged, got ${rec.status}`);
  }
  const addressSlots = s.group.slotsOf.get(address)!;
  if (addressSlots.some((slot) => hasSlotBit(rec.validatedBy, slot))) {
    throw new DevshardError(DevshardErrorCode.DuplicateVote, `slot ${msg.voterSlot}`);
  }
  const authorized = verifyStyledSlotSignature(
    s,
    msg.voterSlot,
    (style) => validationVoteProposerBytes(msg, style),
    msg.proposerSig,
    env,
  );
  if (!authorized) throw new DevshardError(DevshardErrorCode.InvalidProposerSig, `slot ${msg.voterSlot}`);
  requireEscrowId(s, msg.escrowId);

  const weight = s.group.slotCount.get(address)!;
  let validatedBy = rec.validatedBy;
  for (const slot of addressSlots) validatedBy = withSlotBit(validatedBy, slot);
  const votesValid = rec.votesValid + (msg.voteValid ? weight : 0);
  const votesInvalid = rec.votesInvalid + (msg.voteValid ? 0 : weight);
  const threshold = s.config.voteThreshold;

  if (votesInvalid > threshold) {
    const next = withRecord(
      { ...authorized, balance: authorized.balance + rec.actualCost },
      updateRecord(rec, { validatedBy, votesValid, votesInvalid, status: InferenceStatus.Invalidated }),
    );
    return withHostStats(next, rec.executorSlot, (h) => ({
      invalid: h.invalid + 1,
      cost: costWithout(h.cost, rec.actualCost),
    }));
  }
  const status = votesValid > threshold ? InferenceStatus.Validated : rec.status;
  return withRecord(authorized, updateRecord(rec, { validatedBy, votesValid, votesInvalid, status }));
}
