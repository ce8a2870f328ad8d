// The root's cached component hashes equal the plain definitions of §6: host stats hashed from
// per-slot entries cached on the (frozen) stats values, whatever value several slots share.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hostStatsHash } from '../hash/root-formula.js';
import { hostStatsHashOf } from './root.js';
import type { HostStats, WorkingState } from './types.js';

const stats = fc.record({
  missed: fc.nat({ max: 2 ** 32 - 1 }),
  invalid: fc.nat({ max: 1_000 }),
  cost: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
  requiredValidations: fc.nat({ max: 1_000 }),
  completedValidations: fc.nat({ max: 1_000 }),
});

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('hostStatsHashOf', () => {
  it('equals hostStatsHash over the same slots, with values shared between slots and reused', () => {
    fc.assert(
      fc.property(
        fc.array(stats, { minLength: 1, maxLength: 8 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 40 }),
        (pool, picks) => {
          const values: HostStats[] = pool.map((p) => Object.freeze({ ...p }));
          // Several states over the same frozen values, so cached entries are reused across slots.
          for (let round = 0; round < 3; round++) {
            const hostStats = Object.freeze(picks.map((p, i) => values[(p + round * i) % values.length]!));
            const expected = hostStatsHash(hostStats.map((h, slotId) => ({ slotId, ...h })));
            expect(hex(hostStatsHashOf({ hostStats } as unknown as WorkingState))).toBe(hex(expected));
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});
