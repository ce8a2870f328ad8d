import { describe, expect, it } from 'vitest';
import { drawSlots } from './slot-draw.js';

const weights = [
  { address: 'gonka1d', weight: 100n },
  { address: 'gonka1a', weight: 400n },
  { address: 'gonka1c', weight: 200n },
  { address: 'gonka1b', weight: 300n },
  { address: 'gonka1z', weight: 0n },
];

describe('drawSlots', () => {
  const draw = (seed: string, appHashHex = 'ab'.repeat(32)) =>
    drawSlots({ appHashHex, seed, modelId: 'm', weights, groupSize: 16 });

  it('is deterministic in app hash and seed, and changes with either', () => {
    expect(draw('devshard_escrow:1')).toEqual(draw('devshard_escrow:1'));
    expect(draw('devshard_escrow:2')).not.toEqual(draw('devshard_escrow:1'));
    expect(draw('devshard_escrow:1', 'cd'.repeat(32))).not.toEqual(draw('devshard_escrow:1'));
  });

  it('draws group_size slots by weight, never a zero-weight entry', () => {
    const counts = new Map<string, number>();
    for (let id = 1; id <= 200; id++)
      for (const s of draw(`devshard_escrow:${id}`)) counts.set(s, (counts.get(s) ?? 0) + 1);
    expect(draw('devshard_escrow:1')).toHaveLength(16);
    expect(counts.has('gonka1z')).toBe(false);
    // 3,200 draws: the heaviest validator gets clearly more slots than the lightest.
    expect(counts.get('gonka1a')!).toBeGreaterThan(2 * counts.get('gonka1d')!);
  });

  it('returns no slots without weight', () => {
    expect(drawSlots({ appHashHex: '', seed: 's', modelId: 'm', weights: [], groupSize: 16 })).toEqual([]);
  });
});
