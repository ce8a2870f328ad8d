import { hashApiKey } from '@gonka-gateway/shared';
import { describe, expect, it } from 'vitest';
import { DIGESTS_KEPT, KeyDigests } from './auth.js';

describe('KeyDigests (the digest of a presented key, kept by key)', () => {
  it('gives the SHA-256 digest of the key, the same on a repeat', () => {
    const digests = new KeyDigests();
    const key = `sk-${'ab'.repeat(24)}`;
    expect(digests.of(key).equals(hashApiKey(key))).toBe(true);
    expect(digests.of(key).equals(hashApiKey(key))).toBe(true);
    expect(digests.of(`${key}0`).equals(hashApiKey(`${key}0`))).toBe(true);
    expect(digests.size).toBe(2);
  });

  it('keeps at most DIGESTS_KEPT keys: a flood of wrong keys evicts the oldest, never grows past it', () => {
    const digests = new KeyDigests();
    for (let i = 0; i < DIGESTS_KEPT + 50; i++) digests.of(`sk-wrong-${i}`);
    expect(digests.size).toBe(DIGESTS_KEPT);
    // An evicted key is hashed again, correctly.
    expect(digests.of('sk-wrong-0').equals(hashApiKey('sk-wrong-0'))).toBe(true);
    expect(digests.size).toBe(DIGESTS_KEPT);
  });
});
