import type { OwnedEscrowInfo } from '@gonka-gateway/escrow-runtime';
import { describe, expect, it } from 'vitest';
import {
  canFund,
  DEPLETION_THRESHOLD,
  DOMINANT_PENALTY,
  fundingOf,
  hostPenalty,
  MISMATCH_PENALTY,
  pickOwned,
  shortfallAmong,
} from './pick-escrow.js';

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
  dominantHosts: 0,
  blockedHosts: 0,
  served: { match: 0, mismatch: 0, truncated: 0 },
  slotCount: undefined,
  nextExecutor: undefined,
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
    // Short of funds by its numbers: a last resort, after every escrow that can pay (its session
    // decides with what the queued host txs return, before any nonce); depleted ones never.
    expect(
      pickOwned([escrow(1n, { balance: 1_000_000_000n }), escrow(2n, { inFlight: 9 })], 'm', big)?.escrowId,
    ).toBe(2n);
    expect(pickOwned([escrow(1n, { balance: 1_000_000_000n })], 'm', big)?.escrowId).toBe(1n);
    expect(pickOwned([escrow(1n, { balance: 999_999n })], 'm', r)).toBeUndefined();
  });

  it('tells a request too big for an escrow from a depleted escrow, and sums up the ones too small', () => {
    // (100 + 200) × 1000 + 10 = 300,010 needed.
    const small = escrow(1n, { balance: 1_200_000n });
    const smaller = escrow(2n, { balance: 1_100_000n, tokenPrice: 2_000n });
    const big = escrow(3n, { balance: 5_000_000_000n });
    const bigR = { inputTokens: 1_000n, maxTokens: 200n }; // 1,200,010 on price 1000
    expect(fundingOf(small, r)).toBe('funds');
    expect(fundingOf(small, bigR)).toBe('exceeds');
    expect(fundingOf(escrow(4n, { balance: 999_999n }), r)).toBe('depleted');
    expect(fundingOf(escrow(5n, { balance: undefined }), r)).toBe('unknown');
    expect(pickOwned([small, smaller, big], 'm', bigR)?.escrowId).toBe(3n);
    expect(pickOwned([small, smaller, { ...big, inFlight: 30 }], 'm', bigR)?.escrowId).toBe(3n);
    // Without the big one: two escrows that cannot fund it, the least need and the most reservable.
    expect(shortfallAmong([small, smaller, escrow(4n, { balance: 999_999n })], 'm', bigR)).toEqual({
      escrows: 2,
      needed: 1_200_010n,
      available: 1_199_990n,
    });
    // Those the request already refused are not counted twice; none short: nothing to say.
    expect(shortfallAmong([small, smaller], 'm', bigR, new Set([1n]))?.escrows).toBe(1);
    expect(shortfallAmong([small, big], 'm', r)).toBeUndefined();
  });

  describe('host quality: served bytes and dominant hosts', () => {
    it('takes an escrow with a blocked dominant host only when no other escrow can take the request', () => {
      const owned = [
        escrow(1n, { inFlight: 0, dominantHosts: 1, blockedHosts: 1 }),
        escrow(2n, { inFlight: 12 }),
      ];
      expect(pickOwned(owned, 'm', r)?.escrowId).toBe(2n);
      expect(pickOwned(owned, 'm', r, new Set(), false)?.escrowId).toBe(2n);
      // The clean one cannot start (nonce limit, draining…) or pay: the blocked one still serves.
      expect(pickOwned([owned[0]!, escrow(2n, { canStart: false })], 'm', r)?.escrowId).toBe(1n);
      expect(pickOwned([owned[0]!, escrow(2n, { balance: 0n })], 'm', r)?.escrowId).toBe(1n);
      expect(pickOwned(owned, 'm', r, new Set([2n]))?.escrowId).toBe(1n);
      // Never an escrow whose session cannot start, whatever its hosts.
      expect(
        pickOwned([escrow(1n, { canStart: false }), escrow(2n, { canStart: false })], 'm', r),
      ).toBeUndefined();
      // Among blocked ones, the load still decides.
      const blocked = { dominantHosts: 1, blockedHosts: 1 };
      expect(
        pickOwned([escrow(1n, { ...blocked, inFlight: 4 }), escrow(2n, { ...blocked, inFlight: 1 })], 'm', r)
          ?.escrowId,
      ).toBe(2n);
    });

    it('scores down a group with an unblocked dominant host and hosts whose Finish hashes mismatched', () => {
      // Equal load: the clean escrow wins the tie, whichever comes first.
      const dominant = escrow(1n, { dominantHosts: 1 });
      const liar = escrow(2n, { served: { match: 3, mismatch: 1, truncated: 0 } });
      const clean = escrow(3n, { served: { match: 4, mismatch: 0, truncated: 2 } });
      expect(pickOwned([dominant, clean], 'm', r)?.escrowId).toBe(3n);
      expect(pickOwned([liar, clean], 'm', r)?.escrowId).toBe(3n);
      expect(hostPenalty(dominant)).toBe(DOMINANT_PENALTY);
      expect(hostPenalty(liar)).toBe(MISMATCH_PENALTY / 4);
      expect(hostPenalty(clean)).toBe(0);
      // A penalty, not a ban: once the clean escrow is busier by more than it, the penalised one serves.
      // Capacity 4: 3 in flight = 0.75 per slot > 0.5 (dominant) = 0.5 (liar).
      expect(pickOwned([dominant, escrow(3n, { inFlight: 3 })], 'm', r)?.escrowId).toBe(1n);
      expect(pickOwned([liar, escrow(3n, { inFlight: 1 })], 'm', r)?.escrowId).toBe(3n);
      expect(pickOwned([liar, escrow(3n, { inFlight: 3 })], 'm', r)?.escrowId).toBe(2n);
      // Capacity-aware off: the penalty is in requests in flight.
      expect(
        pickOwned(
          [escrow(1n, { dominantHosts: 1, inFlight: 2 }), escrow(3n, { inFlight: 2 })],
          'm',
          r,
          new Set(),
          false,
        )?.escrowId,
      ).toBe(3n);
      // The more mismatches, the lower: a 100% liar loses to a 25% one.
      const worse = escrow(4n, { served: { match: 0, mismatch: 2, truncated: 0 } });
      expect(pickOwned([worse, liar], 'm', r)?.escrowId).toBe(2n);
    });
  });
});
