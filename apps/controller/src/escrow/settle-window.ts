// The settlement window (chain-and-network.md §2.6 Settle rule 9): the chain accepts a settle only
// while its current epoch is the escrow's epoch or the next one, so the window closes when the
// epoch after that begins. The settle job reads where the chain is on every attempt: past half of
// the longest window (the escrow's own epoch is over) it warns and counts, close to the end it logs
// an alert-worthy error, and once closed it stops (the chain would refuse every attempt).
import { blocksUntilEpochSwitch, effectiveEpochIndex, type LatestEpoch } from '@gonka-gateway/chain';

export type SettleWindowStage = 'open' | 'half_passed' | 'closing' | 'closed';

export interface SettleWindow {
  escrowEpoch: bigint;
  currentEpoch: bigint;
  /** Blocks until the chain stops accepting the settle (0 once closed). */
  blocksLeft: bigint;
  stage: SettleWindowStage;
}

/** "Closing": fewer blocks left than a tenth of an epoch, and never fewer than 20. */
export function closingThreshold(epochLength: bigint): bigint {
  const tenth = epochLength / 10n;
  return tenth > 20n ? tenth : 20n;
}

export function settleWindowOf(latest: LatestEpoch, epochLength: bigint, escrowEpoch: bigint): SettleWindow {
  return settleWindowAt(
    effectiveEpochIndex(latest),
    blocksUntilEpochSwitch(latest),
    epochLength,
    escrowEpoch,
  );
}

/** The same from the epoch in force and the blocks to the next switch (a ChainPhase has both). */
export function settleWindowAt(
  currentEpoch: bigint,
  toSwitch: bigint,
  epochLength: bigint,
  escrowEpoch: bigint,
): SettleWindow {
  // At the switch block itself the epoch in force has already moved up while the switch height is
  // still this block (toSwitch 0, chain-and-network.md §3.3): the next switch is an epoch away. A
  // node whose stage heights lag (toSwitch < 0) is read the same way, never as a closed window.
  const ahead = toSwitch > 0n ? toSwitch : toSwitch + epochLength;
  const untilSwitch = ahead > 0n ? ahead : 0n;
  let blocksLeft: bigint;
  if (currentEpoch <= escrowEpoch) blocksLeft = untilSwitch + epochLength;
  else if (currentEpoch === escrowEpoch + 1n) blocksLeft = untilSwitch;
  else blocksLeft = 0n;
  const stage: SettleWindowStage =
    blocksLeft === 0n
      ? 'closed'
      : blocksLeft <= closingThreshold(epochLength)
        ? 'closing'
        : currentEpoch > escrowEpoch
          ? 'half_passed'
          : 'open';
  return { escrowEpoch, currentEpoch, blocksLeft, stage };
}
