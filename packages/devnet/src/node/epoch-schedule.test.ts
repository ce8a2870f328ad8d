import { describe, expect, it } from 'vitest';
import { defaultEpochParams } from '../chain/params.js';
import { effectiveEpochAt, latestEpochAt, phaseAt, stagesOf, validateEpochParams } from './epoch-schedule.js';

// chain-and-network.md §3.3: set_new_validators = poc_start + stage + delay + duration + snv_delay.
describe('epoch schedule', () => {
  const p = defaultEpochParams(); // length 200: PoC 200..219, switch at 220

  it('derives stage heights with the documented formula', () => {
    expect(stagesOf(p, 1n)).toEqual({
      epochIndex: 1n,
      pocStart: 200n,
      pocGenerationWindDown: 210n,
      pocValidationStart: 212n,
      pocValidationWindDown: 218n,
      setNewValidators: 220n,
      nextPocStart: 400n,
    });
  });

  it('walks through the phases of an epoch', () => {
    const at = (h: bigint) => [phaseAt(p, h), latestEpochAt(p, h), effectiveEpochAt(p, h)];
    expect(at(1n)).toEqual(['Inference', 0n, 0n]);
    expect(at(199n)).toEqual(['Inference', 0n, 0n]);
    expect(at(200n)).toEqual(['PoCGenerate', 1n, 0n]);
    expect(at(210n)).toEqual(['PoCGenerateWindDown', 1n, 0n]);
    expect(at(212n)).toEqual(['PoCValidate', 1n, 0n]);
    expect(at(218n)).toEqual(['PoCValidateWindDown', 1n, 0n]);
    expect(at(219n)).toEqual(['PoCValidateWindDown', 1n, 0n]);
    expect(at(220n)).toEqual(['Inference', 1n, 1n]);
    expect(at(420n)).toEqual(['Inference', 2n, 2n]);
  });

  it('rejects PoC stages that do not fit in the epoch', () => {
    expect(() => validateEpochParams({ ...p, epochLength: 20n })).toThrow(/fit/);
  });
});
