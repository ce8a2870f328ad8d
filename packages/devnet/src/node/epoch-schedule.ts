// Epochs and PoC phases from epoch_params (chain-and-network.md §3.3). Epoch 0 is genesis: it is
// effective from height 1 and has no PoC. For e ≥ 1:
//   poc_start(e)          = epoch_shift + e × epoch_length
//   set_new_validators(e) = poc_start + poc_stage_duration + poc_validation_delay
//                           + poc_validation_duration + set_new_validators_delay   (§3.3 formula)
//   next_poc_start(e)     = poc_start + epoch_length
// The latest epoch is the last one whose PoC has started; the effective epoch (escrow epoch_index,
// the settle window) switches only at set_new_validators, as on the chain.

import type { EpochParams } from '@gonka-gateway/chain';
import {
  type ConfirmationPocPhase as ChainConfirmationPocPhase,
  CONFIRMATION_POC_PHASES,
} from '@gonka-gateway/chain';

export type EpochPhase =
  | 'Inference'
  | 'PoCGenerate'
  | 'PoCGenerateWindDown'
  | 'PoCValidate'
  | 'PoCValidateWindDown';

export interface EpochStages {
  epochIndex: bigint;
  pocStart: bigint;
  pocGenerationWindDown: bigint;
  pocValidationStart: bigint;
  pocValidationWindDown: bigint;
  setNewValidators: bigint;
  nextPocStart: bigint;
}

/** Phase names of a confirmation PoC event (§3.3): 0 inactive … 4 completed; the client's list. */
export { CONFIRMATION_POC_PHASES };
export type ConfirmationPocPhase = Exclude<ChainConfirmationPocPhase, 'UNKNOWN'>;

export function validateEpochParams(p: EpochParams): void {
  const pocSpan =
    p.pocStageDuration + p.pocValidationDelay + p.pocValidationDuration + p.setNewValidatorsDelay;
  if (p.epochLength <= 0n || p.epochShift < 0n)
    throw new RangeError('epoch_length must be > 0 and epoch_shift ≥ 0');
  if (pocSpan >= p.epochLength) throw new RangeError('PoC stages must fit inside epoch_length');
}

export function pocStartOf(p: EpochParams, epoch: bigint): bigint {
  return epoch === 0n ? 0n : p.epochShift + epoch * p.epochLength;
}

export function stagesOf(p: EpochParams, epoch: bigint): EpochStages {
  const start = pocStartOf(p, epoch);
  const nextPocStart = pocStartOf(p, epoch + 1n);
  if (epoch === 0n) {
    return {
      epochIndex: 0n,
      pocStart: 0n,
      pocGenerationWindDown: 0n,
      pocValidationStart: 0n,
      pocValidationWindDown: 0n,
      setNewValidators: 0n,
      nextPocStart,
    };
  }
  const windDown = start + p.pocStageDuration;
  const validationStart = windDown + p.pocValidationDelay;
  const validationWindDown = validationStart + p.pocValidationDuration;
  return {
    epochIndex: epoch,
    pocStart: start,
    pocGenerationWindDown: windDown,
    pocValidationStart: validationStart,
    pocValidationWindDown: validationWindDown,
    setNewValidators: validationWindDown + p.setNewValidatorsDelay,
    nextPocStart,
  };
}

/** The last epoch whose PoC has started at `height`. */
export function latestEpochAt(p: EpochParams, height: bigint): bigint {
  if (height < p.epochShift + p.epochLength) return 0n;
  return (height - p.epochShift) / p.epochLength;
}

/** The epoch in force at `height` (changes at set_new_validators). */
export function effectiveEpochAt(p: EpochParams, height: bigint): bigint {
  const latest = latestEpochAt(p, height);
  if (latest === 0n) return 0n;
  return height >= stagesOf(p, latest).setNewValidators ? latest : latest - 1n;
}

export function phaseAt(p: EpochParams, height: bigint): EpochPhase {
  const latest = latestEpochAt(p, height);
  if (latest === 0n) return 'Inference';
  const s = stagesOf(p, latest);
  if (height < s.pocGenerationWindDown) return 'PoCGenerate';
  if (height < s.pocValidationStart) return 'PoCGenerateWindDown';
  if (height < s.pocValidationWindDown) return 'PoCValidate';
  if (height < s.setNewValidators) return 'PoCValidateWindDown';
  return 'Inference';
}
