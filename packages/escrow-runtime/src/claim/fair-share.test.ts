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

describe('planClaims: spreading toward fresh peers', () => {
  const four = [1, 2, 3, 4].map((i) => escrow(i));
  const owners = (pairs: [number, string][]) => new Map(pairs.map(([id, r]) => [BigInt(id), r]));

  it('claims one escrow at once when nobody owns one, even the only escrow of two replicas', () => {
    const one = plan({ escrows: [escrow(1)], peers: ['r2'] });
    expect(one.claim.map((c) => c.want)).toEqual([1]);
    expect(one.deferred).toEqual([]);
  });

  it('claims up to the floor share at once, and past it only while no peer owns fewer', () => {
    // Four escrows over three replicas: share 2, floor 1. Both peers own nothing: one at once, the
    // rest left to them until due.
    const p = plan({ escrows: four, liveReplicas: 3, peers: ['r2', 'r3'] });
    expect(p.claim.map((c) => [c.want, c.afterDeferral ?? false])).toEqual([[1, false]]);
    expect(p.deferred).toHaveLength(4);
    // Owning one, a peer owns none: nothing at once.
    const past = plan({
      escrows: four,
      liveReplicas: 3,
      peers: ['r2', 'r3'],
      mine: ids(1),
      leased: ids(1, 2),
      leaseOwners: owners([[2, 'r2']]),
    });
    expect(past.claim).toEqual([]);
    expect([...past.deferred].sort()).toEqual([3n, 4n]);
    // Every peer owns one as well: the second at once.
    const even = plan({
      escrows: four,
      liveReplicas: 3,
      peers: ['r2', 'r3'],
      mine: ids(1),
      leased: ids(1, 2, 3),
      leaseOwners: owners([
        [2, 'r2'],
        [3, 'r3'],
      ]),
    });
    expect(even.claim.map((c) => c.want)).toEqual([1]);
    // Ten escrows over two: the floor share of five is claimed at once.
    const ten = plan({ escrows: [...Array(10).keys()].map((i) => escrow(i + 1)), peers: ['r2'] });
    expect(ten.claim.map((c) => c.want)).toEqual([5]);
  });

  it('claims a deferred escrow once due, or at once when the model is held', () => {
    const base = {
      escrows: four,
      liveReplicas: 3,
      peers: ['r2', 'r3'],
      mine: ids(1),
      leased: ids(1, 2),
      leaseOwners: owners([[2, 'r2']]),
    };
    const due = plan({ ...base, due: ids(4) });
    expect(due.claim.map((c) => [c.want, c.afterDeferral, c.escrows.map((e) => e.escrowId)])).toEqual([
      [1, true, [4n]],
    ]);
    expect(due.deferred).toEqual([]); // at its share once it has the due one
    const held = plan({ ...base, held: new Set(['m']) });
    expect(held.claim.map((c) => c.want)).toEqual([1]);
    expect(held.deferred).toEqual([]);
  });

  it('without fresh peers claims up to the share at once (a dead replica delays no takeover)', () => {
    const p = plan({ escrows: four, liveReplicas: 3, mine: ids(1), leased: ids(1) });
    expect(p.claim.map((c) => c.want)).toEqual([1]);
    expect(p.deferred).toEqual([]);
  });

  it('in a steady state the replica owning the most hands one to a peer owning two fewer', () => {
    const steady = {
      escrows: four,
      liveReplicas: 3,
      peers: ['r2', 'r3'],
      mine: ids(1, 2),
      leased: ids(1, 2, 3, 4),
    };
    // r1 and r2 own two each, r3 none: the lower id hands one back.
    const tie = owners([
      [3, 'r2'],
      [4, 'r2'],
    ]);
    expect(plan({ ...steady, leaseOwners: tie }).release).toHaveLength(1);
    expect(plan({ ...steady, replicaId: 'r9', leaseOwners: tie }).release).toEqual([]);
    // Two and one and one: balanced within one, nothing moves.
    const spread = owners([
      [3, 'r2'],
      [4, 'r3'],
    ]);
    expect(plan({ ...steady, leaseOwners: spread }).release).toEqual([]);
    // A held model is never handed to a peer.
    expect(plan({ ...steady, leaseOwners: tie, held: new Set(['m']) }).release).toEqual([]);
  });
});
