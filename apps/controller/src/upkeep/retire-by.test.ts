// The retire-by arithmetic (settle-window safety): window close − (execution_timeout + 5 s skew +
// margin + one tick) in blocks, never before the end of the escrow's own epoch; and where the window
// closes from the chain phase (Settle rule 9: the escrow's epoch or the next).
import { describe, expect, it } from 'vitest';
import type { ChainPhase } from './chain-phase.js';
import { pastRetireBy, retireByHeight, settleWindowsOf, windowClosesAt } from './retire-by.js';

const MAINNET_LIKE = { tickMs: 15_000, marginMs: 120_000 };

describe('retire-by height', () => {
  it('keeps execution_timeout + skew + margin + one tick before the close, in blocks rounded up', () => {
    // 1,920 s + 5 s + 120 s + 15 s = 2,060 s at 6 s a block = 343.3 → 344 blocks.
    expect(
      retireByHeight({
        closesAt: 100_000n,
        epochLength: 15_000n,
        executionTimeoutS: 1_920n,
        msPerBlock: 6_000,
        timing: MAINNET_LIKE,
      }),
    ).toEqual({ height: 100_000n - 344n, reserveBlocks: 344n, capped: false });
    // A fast devnet (250 ms blocks, 50 s epochs) with a 10 s execution timeout and a 10 s margin: 10 + 5 + 10 + 15 = 40 s
    // at 250 ms = 160 blocks, inside a 200-block epoch.
    expect(
      retireByHeight({
        closesAt: 1_000n,
        epochLength: 200n,
        executionTimeoutS: 10n,
        msPerBlock: 250,
        timing: { tickMs: 15_000, marginMs: 10_000 },
      }),
    ).toEqual({ height: 840n, reserveBlocks: 160n, capped: false });
  });

  it('never lies before the end of the escrow epoch: a reserve longer than an epoch is capped', () => {
    // 1,920 s at 250 ms is 8,300+ blocks against 200-block epochs: retired at the switch into epoch + 1.
    const r = retireByHeight({
      closesAt: 1_000n,
      epochLength: 200n,
      executionTimeoutS: 1_920n,
      msPerBlock: 250,
      timing: MAINNET_LIKE,
    });
    expect(r).toEqual({ height: 800n, reserveBlocks: 8_240n, capped: true });
  });
});

const phase = (blockHeight: bigint, epoch: bigint, blocksToSwitch: bigint): ChainPhase => ({
  blockHeight,
  epoch,
  latestEpoch: epoch,
  phase: 'Inference',
  pocActive: false,
  blocksToSwitch,
  switchEpoch: epoch + 1n,
});

describe('window close', () => {
  const L = 200n;
  it('is the switch into escrow epoch + 2; null once passed', () => {
    // Epoch 5, switch into 6 at 1,250: the window of an epoch-5 escrow closes at 1,450.
    expect(windowClosesAt(phase(1_200n, 5n, 50n), L, 5n)).toBe(1_450n);
    // In epoch 6 the same escrow has until the next switch — also at the switch block itself, where
    // the epoch in force is already 6 and the switch height is this block (0 blocks to it).
    expect(windowClosesAt(phase(1_300n, 6n, 150n), L, 5n)).toBe(1_450n);
    expect(windowClosesAt(phase(1_250n, 6n, 0n), L, 5n)).toBe(1_450n);
    expect(windowClosesAt(phase(1_460n, 7n, 190n), L, 5n)).toBeNull();
  });

  it('per escrow: its own execution_timeout (else the params), the retire-by, and whether it is due', () => {
    const at = phase(1_300n, 6n, 150n);
    const params = { epoch: { epochLength: L }, devshardEscrow: { executionTimeout: 30n } } as never;
    const row = (id: string, epoch: string, timeout: string | null, role = 'regular') => ({
      escrow_id: id,
      model_id: 'm',
      role,
      state: 'active',
      amount: '5000000000',
      epoch_index: epoch,
      execution_timeout: timeout,
    });
    const timing = { tickMs: 1_000, marginMs: 4_000 };
    const w = settleWindowsOf(at, params, { msPerBlock: 100, overBlocks: 1_000, overMs: 100_000 }, timing, [
      row('1', '5', '10'),
      row('2', '5', null),
      row('3', '6', '0'),
      row('4', '4', '10', 'temp'),
    ]);
    // #1: close 1,450, reserve (10 + 5 + 4 + 1) s = 200 blocks, capped at the epoch (200): 1,250.
    // #2: the params' 30 s: 400 blocks, capped: 1,250. #3 (epoch 6): close 1,650 − 200 = 1,450.
    expect(w.escrows.map((e) => [e.escrowId, e.executionTimeoutS, e.closesAt, e.retireBy?.height])).toEqual([
      [1n, 10n, 1_450n, 1_250n],
      [2n, 30n, 1_450n, 1_250n],
      [3n, 30n, 1_650n, 1_450n],
      [4n, 10n, null, undefined],
    ]);
    expect(w.escrows.map((e) => pastRetireBy(e, at.blockHeight))).toEqual([true, true, false, true]);
    // Without a block time estimate only a closed window is known.
    const blind = settleWindowsOf(at, params, undefined, timing, [row('1', '5', '10'), row('4', '4', '10')]);
    expect(blind.escrows.map((e) => pastRetireBy(e, at.blockHeight))).toEqual([false, true]);
  });
});
