// Pure epoch arithmetic over a LatestEpoch (chain-and-network.md §3.3).
import type { LatestEpoch } from './epochs.js';
import type { EpochParams } from './params.js';

/**
 * The height at which the next validator set takes over, first rule that applies:
 * this epoch's set_new_validators if still ahead (≥ block_height); else the next epoch's
 * set_new_validators if known (> 0); else this epoch's next_poc_start if known (> 0); else the
 * latest epoch's poc_start_block_height.
 */
export function epochSwitchHeight(e: LatestEpoch): bigint {
  const cur = e.epochStages;
  if (cur && cur.setNewValidators >= e.blockHeight) return cur.setNewValidators;
  if (e.nextEpochStages && e.nextEpochStages.setNewValidators > 0n) return e.nextEpochStages.setNewValidators;
  if (cur && cur.nextPocStart > 0n) return cur.nextPocStart;
  return e.pocStartBlockHeight;
}

/**
 * The epoch whose validator set is in force at block_height: what the chain calls the current
 * epoch (escrow epoch_index, the settle window of §2.6 rule 9). `latest_epoch.index` moves up when
 * PoC starts, but the new set only takes over at that epoch's set_new_validators.
 */
export function effectiveEpochIndex(e: LatestEpoch): bigint {
  const stages = e.epochStages;
  const pending =
    stages !== null && stages.epochIndex === e.epochIndex && e.blockHeight < stages.setNewValidators;
  return pending && e.epochIndex > 0n ? e.epochIndex - 1n : e.epochIndex;
}

/** Blocks left until the switch (negative if the node's data is stale). */
export function blocksUntilEpochSwitch(e: LatestEpoch): bigint {
  return epochSwitchHeight(e) - e.blockHeight;
}

const POC_PHASES = new Set(['PoCGenerate', 'PoCGenerateWindDown', 'PoCValidate', 'PoCValidateWindDown']);
const ACTIVE_CONFIRMATION = new Set([
  'CONFIRMATION_POC_GRACE_PERIOD',
  'CONFIRMATION_POC_GENERATION',
  'CONFIRMATION_POC_VALIDATION',
]);

/** PoC is active in one of the four PoC phases or a grace/generation/validation confirmation PoC. */
export function isPocActive(e: LatestEpoch): boolean {
  if (POC_PHASES.has(e.phase)) return true;
  return e.confirmationPoc !== null && ACTIVE_CONFIRMATION.has(e.confirmationPoc.phase);
}

/** Stage heights from chain params alone, when the node API is unavailable. */
export function epochStagesFromParams(
  pocStartBlockHeight: bigint,
  p: EpochParams,
): { setNewValidators: bigint; nextPocStart: bigint } {
  return {
    setNewValidators:
      pocStartBlockHeight +
      p.pocStageDuration +
      p.pocValidationDelay +
      p.pocValidationDuration +
      p.setNewValidatorsDelay,
    nextPocStart: pocStartBlockHeight + p.epochLength,
  };
}
