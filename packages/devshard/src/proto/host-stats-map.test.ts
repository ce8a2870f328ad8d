import { bytesToHex } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import { decodeHostStatsMap, encodeHostStatsMap } from './host-stats-map.js';

const zero = (slotId: number) => ({
  slotId,
  missed: 0,
  invalid: 0,
  cost: 0n,
  requiredValidations: 0,
  completedValidations: 0,
});

describe('HostStatsMapProto (§6 vector)', () => {
  it('encodes five zero slots with slot 0 as an empty entry', () => {
    const bytes = encodeHostStatsMap([0, 1, 2, 3, 4].map(zero));
    expect(bytesToHex(bytes)).toBe('0a000a0208010a0208020a0208030a020804');
    expect(decodeHostStatsMap(bytes)).toEqual([0, 1, 2, 3, 4].map(zero));
  });

  it('writes all six fields when set', () => {
    const entry = {
      slotId: 1,
      missed: 2,
      invalid: 3,
      cost: 2n ** 40n,
      requiredValidations: 5,
      completedValidations: 6,
    };
    expect(decodeHostStatsMap(encodeHostStatsMap([entry]))).toEqual([entry]);
  });
});
