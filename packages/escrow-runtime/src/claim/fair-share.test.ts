import { describe, expect, it } from 'vitest';
import type { ActiveEscrow } from './active-escrows.js';
import { type ClaimPlanInput, planClaims } from './fair-share.js';

const escrow = (id: number, modelId = 'm'): ActiveEscrow => ({
  escrowId: BigInt(id),
  modelId,
  version: 'v5',
  signerKeyEnv: null,
  hasEncryptedKey: false,
  signerKeyEncrypted: null,
});
const ids = (...n: number[]) => new Set(n.map(BigInt));

function plan(extra: Partial<ClaimPlanInput>) {
  return planClaims({
    replicaId: 'r1',
    escrows: [1, 2, 3, 4, 5].map((i) => escrow(i)),
    liveReplicas: 2,
    mine: ids(),
    leased: ids(),
    faulted: ids(),
    overdue: ids(),
    ...extra,
  });
}

describe('planClaims', () => {
  it('claims up to ceil(escrows / replicas) per model, every unowned escrow a candidate', () => {
    const p = plan({});
    expect(p.claim).toHaveLength(1);
    expect(p.claim[0]!.want).toBe(3);
    expect(p.claim[0]!.escrows.map((e) => e.escrowId).sort()).toEqual([1n, 2n, 3n, 4n, 5n]);
    expect(p.release).toEqual([]);
  });

  it('counts shares per model', () => {
    const p = plan({
      escrows: [escrow(1, 'a'), escrow(2, 'a'), escrow(3, 'b')],
      mine: ids(1),
      leased: ids(1),
    });
    expect(p.claim.map((c) => [c.modelId, c.want])).toEqual([['b', 1]]);
  });

  it('never claims a faulted escrow, nor one leased by anyone', () => {
    const p = plan({ faulted: ids(1), leased: ids(2, 3) });
    expect(p.claim[0]!.escrows.map((e) => e.escrowId).sort()).toEqual([4n, 5n]);
  });

  it('claims an overdue escrow beyond its share, first', () => {
    const p = plan({ mine: ids(1, 2, 3), leased: ids(1, 2, 3), overdue: ids(5) });
    expect(p.claim[0]!.want).toBe(1);
    expect(p.claim[0]!.escrows[0]!.escrowId).toBe(5n);
  });

  it('hands back one escrow over the share only once the model is fully owned', () => {
    // Four of five: over the share of 3 but escrow 5 still waits for an owner → keep everything.
    expect(plan({ mine: ids(1, 2, 3, 4), leased: ids(1, 2, 3, 4) }).release).toEqual([]);
    const steady = plan({ mine: ids(1, 2, 3, 4), leased: ids(1, 2, 3, 4, 5) });
    expect(steady.release).toHaveLength(1);
    expect(steady.claim).toEqual([]);
  });

  it('hands back escrows that are no longer active (draining for finalize, deactivated)', () => {
    expect(plan({ mine: ids(9), leased: ids(9) }).release).toEqual([9n]);
  });
});
