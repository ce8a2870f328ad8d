import type { PoolEscrowState } from '@gonka-gateway/shared';
import { describe, expect, it } from 'vitest';
import type { PoolSnapshot } from '../ownership/pool-snapshot.js';
import { insufficientFunds, mayFund, ownerUrl } from './forward-to-owner.js';

const entry = (id: bigint, owner: string, over: Partial<PoolEscrowState> = {}): PoolEscrowState => ({
  escrowId: id,
  modelId: 'm',
  status: 'active',
  capacityWeight: 16,
  balanceEstimate: 5_000_000_000n,
  nonce: 1n,
  owner,
  updatedAtMs: 1,
  ...over,
});

const snapshot = (escrows: PoolEscrowState[]) =>
  ({
    escrows,
    replicaUrl: (id: string) => `http://${id}`,
  }) as unknown as PoolSnapshot;

describe('forwarding a request by funding (pool balance estimates)', () => {
  const plan = { inputTokens: 100, maxTokens: 200 };

  it('an entry may fund a request when its estimate is above the minimum and covers (input + max_tokens) × price', () => {
    expect(mayFund(entry(1n, 'a', { balanceEstimate: 3_000_000n }), plan, 10_000n)).toBe(true);
    expect(mayFund(entry(1n, 'a', { balanceEstimate: 2_999_999n }), plan, 10_000n)).toBe(false);
    expect(mayFund(entry(1n, 'a', { balanceEstimate: 999_999n }), plan, 1n)).toBe(false);
    // No price known: only the minimum.
    expect(mayFund(entry(1n, 'a', { balanceEstimate: 1_000_000n }), plan)).toBe(true);
  });

  it('prefers owners whose escrows may fund it, falls back to any active owner, never a held one', () => {
    const poor = entry(1n, 'poor', { balanceEstimate: 2_000_000n });
    const rich = entry(2n, 'rich');
    const held = entry(3n, 'held', { status: 'held', balanceEstimate: 10n, reserved: 9_000_000n });
    const funds = (e: PoolEscrowState) => mayFund(e, plan, 10_000n);
    const all = () => true;
    for (let i = 0; i < 20; i++) {
      expect(ownerUrl(snapshot([poor, rich, held]), 'self', all, undefined, funds)).toBe('http://rich');
    }
    expect(ownerUrl(snapshot([poor, held]), 'self', all, undefined, funds)).toBe('http://poor');
    expect(ownerUrl(snapshot([held]), 'self', all, undefined, funds)).toBeUndefined();
  });

  it('says how many escrows were short, what the request needs and the most one can reserve', () => {
    const error = insufficientFunds(
      { model: 'm', maxTokens: 200 },
      { escrows: 2, needed: 3_000_010n, available: 1_999_990n },
    );
    expect(error.status).toBe(503);
    expect(error.toBody().error).toEqual({
      message:
        'none of the 2 escrows of model m tried can fund this request: with max_tokens 200 it needs ' +
        '3000010 ngonka and the most one can reserve now is 1999990; lower max_tokens or retry later',
      type: 'api_error',
      param: 'max_tokens',
      code: 'insufficient_escrow_funds',
    });
  });
});
