// What rotation should do at this point of the epoch schedule (spec §3.4; §2.5 pre_poc_blocks),
// decided from the chain phase alone so it can be tested without a chain:
// - bridge: the next epoch switch is at most pre_poc_blocks away and has not happened yet — create
//   the temporary escrows of the transition into `switchEpoch`, then retire the regular ones;
// - target: the chain has left the PoC window — create the regular escrows of the epoch in force,
//   then retire the temporary ones (also the first stage after rotation is switched on mid-epoch,
//   so a model gets its regular escrows without waiting for a whole epoch);
// - hold: PoC (or a confirmation PoC) is running outside the bridge window, or the node's numbers
//   are stale (the switch lies behind the block height): nothing new is started.
import type { ChainPhase } from './chain-phase.js';
import type { RotationRole, RotationStageName } from './rotation-record.js';

export type RotationStep =
  | { stage: RotationStageName; epoch: bigint; role: RotationRole }
  | { stage: 'hold'; reason: 'poc_active' | 'stale_chain_data' };

export function planRotation(p: ChainPhase, prePocBlocks: bigint): RotationStep {
  if (p.blocksToSwitch < 0n) return { stage: 'hold', reason: 'stale_chain_data' };
  if (p.switchEpoch > p.epoch && p.blocksToSwitch <= prePocBlocks) {
    return { stage: 'bridge', epoch: p.switchEpoch, role: 'temp' };
  }
  if (p.pocActive) return { stage: 'hold', reason: 'poc_active' };
  return { stage: 'target', epoch: p.epoch, role: 'regular' };
}

/** Blocks until the next bridge stage starts (0 inside the window), for /v1/debug/rotation. */
export function blocksUntilBridge(p: ChainPhase, prePocBlocks: bigint): bigint {
  return p.blocksToSwitch > prePocBlocks ? p.blocksToSwitch - prePocBlocks : 0n;
}
