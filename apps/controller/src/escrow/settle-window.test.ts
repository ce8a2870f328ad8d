import type { LatestEpoch } from '@gonka-gateway/chain';
import { describe, expect, it } from 'vitest';
import { settleWindowOf } from './settle-window.js';

/** The node's latest epoch at `height` of epoch `index`, the next validator set due at `nextSwitch`. */
function at(height: bigint, index: bigint, nextSwitch: bigint): LatestEpoch {
  const stages = (epochIndex: bigint, setNewValidators: bigint) => ({
    epochIndex,
    setNewValidators,
    nextPocStart: 0n,
    raw: {},
  });
  return {
    blockHeight: height,
    phase: 'Inference',
    epochIndex: index,
    pocStartBlockHeight: nextSwitch - 10n,
    epochStages: stages(index, height - 1n),
    nextEpochStages: stages(index + 1n, nextSwitch),
    isConfirmationPocActive: false,
    confirmationPoc: null,
    raw: {},
  };
}

describe('settle window (Settle rule 9)', () => {
  const epochLength = 1_000n;
  it('is open in the escrow epoch, half passed in the next, closing near its end, closed after', () => {
    expect(settleWindowOf(at(1_100n, 5n, 1_900n), epochLength, 5n)).toEqual({
      escrowEpoch: 5n,
      currentEpoch: 5n,
      blocksLeft: 1_800n,
      stage: 'open',
    });
    expect(settleWindowOf(at(2_100n, 6n, 2_900n), epochLength, 5n)).toMatchObject({
      blocksLeft: 800n,
      stage: 'half_passed',
    });
    expect(settleWindowOf(at(2_850n, 6n, 2_900n), epochLength, 5n)).toMatchObject({
      blocksLeft: 50n,
      stage: 'closing',
    });
    expect(settleWindowOf(at(3_100n, 7n, 3_900n), epochLength, 5n)).toMatchObject({
      blocksLeft: 0n,
      stage: 'closed',
    });
  });

  it('at the switch block itself (epoch in force already the new one, 0 blocks to the switch) the next switch is an epoch away', () => {
    const atSwitch = (height: bigint, index: bigint): LatestEpoch => ({
      ...at(height, index, height + epochLength),
      epochStages: { epochIndex: index, setNewValidators: height, nextPocStart: 0n, raw: {} },
    });
    // The switch into 6 happens at 2,000: an epoch-5 escrow has until the switch into 7 at 3,000.
    expect(settleWindowOf(atSwitch(2_000n, 6n), epochLength, 5n)).toMatchObject({
      currentEpoch: 6n,
      blocksLeft: 1_000n,
      stage: 'half_passed',
    });
    expect(settleWindowOf(atSwitch(3_000n, 7n), epochLength, 5n)).toMatchObject({ stage: 'closed' });
  });
});
