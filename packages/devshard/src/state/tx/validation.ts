// Validation (devshard-protocol.md §5.4). Checks run in the reference's order: a second validation
// from an address that already validated is a no-op *before* its signature is checked.
import { DevshardError, DevshardErrorCode } from '../../errors.js';
import type { MsgValidation } from '../../proto/tx-messages.js';
import { validationProposerBytes } from '../../signing/proposer.js';
import type { TxEnv } from '../apply-context.js';
import { hasSlotBit, updateRecord, withSlotBit } from '../record.js';
import { InferenceStatus, type WorkingState } from '../types.js';
import { verifyStyledSlotSignature } from '../vote-style.js';
import { liveRecordForValidation, requireEscrowId, slotAddress, withRecord } from './common.js';

const VALIDATABLE: ReadonlySet<number> = new Set([
  InferenceStatus.Finished,
  InferenceStatus.Challenged,
  InferenceStatus.Validated,
  InferenceStatus.Invalidated,
]);

export function applyValidation(s: WorkingState, msg: MsgValidation, env: TxEnv): WorkingState {
  const rec = liveRecordForValidation(s, msg.inferenceId);
  const address = slotAddress(s, msg.validatorSlot);
  if (msg.validatorSlot === rec.executorSlot) throw new DevshardError(DevshardErrorCode.SelfValidation);
  if (s.group.slotsOf.get(address)!.some((slot) => hasSlotBit(rec.validatedBy, slot))) return s;
  if (!VALIDATABLE.has(rec.status)) {
    throw new DevshardError(
      DevshardErrorCode.InvalidTransition,
      `expected finished or later, got ${rec.status}`,
    );
  }
  const authorized = verifyStyledSlotSignature(
    s,
    msg.validatorSlot,
    (style) => validationProposerBytes(msg, style),
    msg.proposerSig,
    env,
  );
  if (!authorized) throw new DevshardError(DevshardErrorCode.InvalidProposerSig, `slot ${msg.validatorSlot}`);
  requireEscrowId(s, msg.escrowId);

  // Only the emitting slot's bit is set here (votes set every slot of the address); the reference
  // keeps this asymmetry because both readers use "any slot of the address".
  let changes: Parameters<typeof updateRecord>[1] = {
    validatedBy: withSlotBit(rec.validatedBy, msg.validatorSlot),
  };
  if (rec.status === InferenceStatus.Finished) {
    const weight = s.group.slotCount.get(address)!;
    changes = msg.valid
      ? { ...changes, votesValid: rec.votesValid + weight }
      : { ...changes, votesInvalid: rec.votesInvalid + weight, status: InferenceStatus.Challenged };
  }
  return withRecord(authorized, updateRecord(rec, changes));
}
