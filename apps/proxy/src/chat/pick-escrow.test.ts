import type { OwnedEscrowInfo } from '@gonka-gateway/escrow-runtime';
import { describe, expect, it } from 'vitest';
import { canFund, DEPLETION_THRESHOLD, pickOwned } from './pick-escrow.js';

const escrow = (id: bigint, over: Partial<OwnedEscrowInfo> = {}): OwnedEscrowInfo => ({
  escrowId: id,
  modelId: 'm',
  state: 'serving',
  fencingToken: 1n,
  nonce: 1n,
  inFlight: 0,
  routable: true,
  canStart: true,
  balance: 5_000_000_000n,
  capacityWeight: 4,
  tokenPrice: 1_000n,
  feePerNonce: 10n,
  maxTokensFloor: 64n,
  ...over,
});
const r = { inputTokens: 100n, maxTokens: 200n };

describe('pool routing among owned escrows (spec §1.5, §3.1, §8)', () => {
  it('takes the lowest in-flight per capacity weight, or in-flight alone when capacity-aware is off', () => {
    const owned = [
      escrow(1n, { inFlight: 3, capacityWeight: 8 }),
      escrow(2n, { inFlight: 2, capacityWeight: 2 }),
    ];
    expect(pickOwned(owned, 'm', r)?.escrowId).toBe(1n);
    expect(pickOwned(owned, 'm', r, new Set(), false)?.escrowId).toBe(2n);
  });

  it('skips other models, non-routable (draining, faulted, lease lost), nonce-limited and excluded escrows', () => {
    const owned = [
      escrow(1n, { modelId: 'other' }),
      escrow(2n, { routable: false }),
      escrow(3n, { canStart: false }),
      escrow(4n),
      escrow(5n, { inFlight: 9 }),
    ];
    expect(pickOwned(owned, 'm', r)?.escrowId).toBe(4n);
    expect(pickOwned(owned, 'm', r, new Set([4n]))?.escrowId).toBe(5n);
    expect(pickOwned(owned, 'm', r, new Set([4n, 5n]))).toBeUndefined();
  });

  it('skips depleted escrows and those that cannot pay this request (reservation + fee, floor applied)', () => {
    expect(
      canFund(escrow(1n, { balance: DEPLETION_THRESHOLD - 1n }), { inputTokens: 0n, maxTokens: 0n }),
    ).toBe(false);
    // (100 + 200) × 1000 + 10 = 300,010 < threshold: still refused as depleted.
    expect(canFund(escrow(1n, { balance: 999_999n }), r)).toBe(false);
    const exact = (100n + 200n) * 1_000n + 10n + DEPLETION_THRESHOLD;
    expect(canFund(escrow(1n, { balance: exact }), r)).toBe(true);
    const big = { inputTokens: 1_000_000n, maxTokens: 200n };
    expect(canFund(escrow(1n, { balance: 1_000_000_000n }), big)).toBe(false);
    // max_tokens below the floor reserves the floor: (100 + 64) × 10,000 + 10 > 1,500,000 ≥ (100 + 1) × 10,000 + 10.
    const pricey = escrow(1n, { balance: 1_500_000n, tokenPrice: 10_000n });
    expect(canFund(pricey, { inputTokens: 100n, maxTokens: 1n })).toBe(false);
    expect(canFund({ ...pricey, maxTokensFloor: 1n }, { inputTokens: 100n, maxTokens: 1n })).toBe(true);
    expect(pickOwned([escrow(1n, { balance: 1_000_000_000n })], 'm', big)).toBeUndefined();
  });
});
