import { describe, expect, it } from 'vitest';
import {
  blocksUntilEpochSwitch,
  effectiveEpochIndex,
  epochStagesFromParams,
  epochSwitchHeight,
  isPocActive,
} from './epoch-schedule.js';
import { confirmationPocPhase, type LatestEpoch, parseLatestEpoch } from './epochs.js';

const base = (over: Partial<LatestEpoch>): LatestEpoch => ({
  blockHeight: 1000n,
  phase: 'Inference',
  epochIndex: 7n,
  pocStartBlockHeight: 900n,
  epochStages: null,
  nextEpochStages: null,
  isConfirmationPocActive: false,
  confirmationPoc: null,
  raw: {},
  ...over,
});
const stages = (setNewValidators: bigint, nextPocStart: bigint) => ({
  epochIndex: 7n,
  setNewValidators,
  nextPocStart,
  raw: {},
});

describe('effectiveEpochIndex', () => {
  it('is the previous epoch between PoC start and set_new_validators', () => {
    expect(effectiveEpochIndex(base({ blockHeight: 1000n, epochStages: stages(1200n, 2000n) }))).toBe(6n);
  });

  it('is the latest epoch from set_new_validators on', () => {
    expect(effectiveEpochIndex(base({ blockHeight: 1200n, epochStages: stages(1200n, 2000n) }))).toBe(7n);
    expect(effectiveEpochIndex(base({ blockHeight: 1500n, epochStages: stages(1200n, 2000n) }))).toBe(7n);
  });

  it('is the latest epoch when stage heights are unknown, and never below 0', () => {
    expect(effectiveEpochIndex(base({}))).toBe(7n);
    expect(
      effectiveEpochIndex(base({ epochIndex: 0n, epochStages: { ...stages(1200n, 2000n), epochIndex: 0n } })),
    ).toBe(0n);
  });
});

describe('epochSwitchHeight (chain-and-network.md §3.3)', () => {
  it('1: this epoch set_new_validators when still ahead (>= block height)', () => {
    expect(
      epochSwitchHeight(base({ epochStages: stages(1200n, 2000n), nextEpochStages: stages(3000n, 4000n) })),
    ).toBe(1200n);
    expect(epochSwitchHeight(base({ epochStages: stages(1000n, 2000n) }))).toBe(1000n);
  });

  it('2: else the next epoch set_new_validators when > 0', () => {
    const e = base({ epochStages: stages(950n, 2000n), nextEpochStages: stages(2100n, 3000n) });
    expect(epochSwitchHeight(e)).toBe(2100n);
    expect(blocksUntilEpochSwitch(e)).toBe(1100n);
  });

  it('3: else this epoch next_poc_start when > 0', () => {
    expect(
      epochSwitchHeight(base({ epochStages: stages(950n, 2000n), nextEpochStages: stages(0n, 0n) })),
    ).toBe(2000n);
    expect(epochSwitchHeight(base({ epochStages: stages(950n, 2000n) }))).toBe(2000n);
  });

  it('4: else the latest epoch poc_start_block_height', () => {
    expect(epochSwitchHeight(base({ epochStages: stages(950n, 0n) }))).toBe(900n);
    expect(epochSwitchHeight(base({}))).toBe(900n);
  });

  it('computes stage heights from chain params alone', () => {
    const p = {
      epochLength: 17280n,
      epochShift: 0n,
      pocStageDuration: 60n,
      pocValidationDelay: 10n,
      pocValidationDuration: 40n,
      setNewValidatorsDelay: 5n,
    };
    expect(epochStagesFromParams(1000n, p)).toEqual({ setNewValidators: 1115n, nextPocStart: 18280n });
  });
});

describe('isPocActive', () => {
  it('is true in the four PoC phases', () => {
    for (const phase of ['PoCGenerate', 'PoCGenerateWindDown', 'PoCValidate', 'PoCValidateWindDown']) {
      expect(isPocActive(base({ phase })), phase).toBe(true);
    }
    expect(isPocActive(base({ phase: 'Inference' }))).toBe(false);
  });

  it('is true during a grace/generation/validation confirmation PoC, false when inactive or completed', () => {
    const withPhase = (p: unknown) =>
      base({ confirmationPoc: { phase: confirmationPocPhase(p), triggerHeight: 1n } });
    expect(isPocActive(withPhase(1))).toBe(true);
    expect(isPocActive(withPhase('CONFIRMATION_POC_GENERATION'))).toBe(true);
    expect(isPocActive(withPhase('VALIDATION'))).toBe(true);
    expect(isPocActive(withPhase('3'))).toBe(true);
    expect(isPocActive(withPhase(0))).toBe(false);
    expect(isPocActive(withPhase('CONFIRMATION_POC_COMPLETED'))).toBe(false);
    expect(isPocActive(withPhase('something new'))).toBe(false);
  });
});

describe('parseLatestEpoch', () => {
  it('reads a node answer with mixed numbers and strings', () => {
    const e = parseLatestEpoch({
      block_height: 1234,
      phase: 'PoCGenerate',
      latest_epoch: { index: '42', poc_start_block_height: '1200' },
      epoch_stages: { epoch_index: 42, set_new_validators: 1315, next_poc_start: '18480', poc_start: 1200 },
      next_epoch_stages: { epoch_index: 43, set_new_validators: 18595, next_poc_start: 35760 },
      is_confirmation_poc_active: false,
      active_confirmation_poc_event: { phase: 'CONFIRMATION_POC_GRACE_PERIOD', trigger_height: '1250' },
      unknown: 'ignored',
    });
    expect(e.blockHeight).toBe(1234n);
    expect(e.epochIndex).toBe(42n);
    expect(e.epochStages!.nextPocStart).toBe(18_480n);
    expect(e.confirmationPoc).toEqual({ phase: 'CONFIRMATION_POC_GRACE_PERIOD', triggerHeight: 1250n });
    expect(epochSwitchHeight(e)).toBe(1315n);
    expect(isPocActive(e)).toBe(true);
  });
});
