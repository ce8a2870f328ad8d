import { describe, expect, it } from 'vitest';
import { decodePoolState, encodePoolState, type PoolEscrowState, PoolStateCodecError } from './pool-state.js';

const state: PoolEscrowState = {
  escrowId: 18446744073709551615n,
  modelId: 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8',
  status: 'active',
  capacityWeight: 16,
  balanceEstimate: 9_999_999_999_999_999_999n,
  nonce: 19_800n,
  owner: 'proxy-a',
  updatedAtMs: 1_760_000_000_000,
};

describe('pool state codec', () => {
  it('round-trips every field, including uint64 extremes and an unowned escrow', () => {
    expect(decodePoolState(encodePoolState(state))).toEqual(state);
    const unowned = { ...state, owner: null, status: 'draining' as const };
    expect(decodePoolState(encodePoolState(unowned))).toEqual(unowned);
    const faulted = { ...state, status: 'faulted' as const, cause: 'diverged: host state_hash differs' };
    expect(decodePoolState(encodePoolState(faulted))).toEqual(faulted);
    const held = { ...state, status: 'held' as const, balanceEstimate: 400_000n, reserved: 3_000_000n };
    expect(decodePoolState(encodePoolState(held))).toEqual(held);
    // The owner knows the escrow's max_nonce; without it both fields are written empty (unknown).
    const ceiling = { ...state, nonceCeiling: 1_000_000n, routingStop: 999_783n };
    expect(decodePoolState(encodePoolState(ceiling))).toEqual(ceiling);
    expect(encodePoolState(state)).toMatchObject({ nonce_ceiling: '', routing_stop: '' });
  });

  it('returns null for a missing key', () => {
    expect(decodePoolState({})).toBeNull();
  });

  it.each([
    ['status', 'bogus'],
    ['nonce', '-1'],
    ['nonce', '1.5'],
    ['balance_estimate', '1e9'],
    ['capacity_weight', 'NaN'],
    ['model_id', ''],
    ['escrow_id', '007'],
    ['reserved', '-5'],
  ])('rejects a malformed %s', (field, value) => {
    expect(() => decodePoolState({ ...encodePoolState(state), [field]: value })).toThrow(PoolStateCodecError);
  });
});
