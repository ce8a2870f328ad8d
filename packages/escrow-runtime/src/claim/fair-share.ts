// Which escrows a replica claims and which it gives back on one claim pass (architecture §2.2):
// per model, a replica owns at most ceil(escrows of the model / live replicas), so ownership stays
// balanced, and the shares of all live replicas always cover every escrow. Pure, so the rules are
// tested without Redis.
//
// Spreading (architecture §2.4: a request landing on a replica that owns no escrow of its model pays
// a forward to the owner): with at least as many escrows of a model as live replicas, every replica
// should own one. The ceiling alone allows 2, 2, 0 for four escrows over three replicas, so past the
// floor share (escrows ÷ replicas rounded down, which every replica can hold at once) a replica
// claims at once only while no fresh peer owns fewer of the model than it does; otherwise it leaves
// the escrow to that peer for `due` (the claim loop's spread deferral, one pass period) and then
// claims it anyway, so an escrow never waits longer than that bound for a peer that does not take
// it. In a steady state the replica owning the most hands one back to a peer owning two fewer. A
// model whose deferred escrow a peer did not take (a peer that cannot serve it) is `held`: no
// deferral and no such hand-back for a while, so a peer that never claims costs one wait, not a
// drain every few passes.
import { createHash } from 'node:crypto';
import type { ActiveEscrow } from './active-escrows.js';

export interface ClaimPlanInput {
  readonly replicaId: string;
  readonly escrows: readonly ActiveEscrow[];
  /** Live replicas counted by the directory (this one included; at least 1 is assumed). */
  readonly liveReplicas: number;
  /** Escrows this replica owns now (any state but closed). */
  readonly mine: ReadonlySet<bigint>;
  /** Escrows whose lease is held by anyone (this replica included). */
  readonly leased: ReadonlySet<bigint>;
  /** Escrows out of routing for a breaker (pool status `faulted`): never claimed automatically. */
  readonly faulted: ReadonlySet<bigint>;
  /**
   * Unowned escrows that have stayed unowned for a grace period: claimed even beyond the share, so a
   * miscounted directory (a replica that just died, a FLUSHALL) never leaves an escrow unserved.
   */
  readonly overdue: ReadonlySet<bigint>;
  /**
   * Other live replicas whose directory entry was refreshed lately (a replica that died stops
   * refreshing, so it is no peer long before its entry expires). Escrows are spread toward these.
   */
  readonly peers?: readonly string[];
  /** The replica holding each leased escrow's lease (from its value), to count the peers' escrows. */
  readonly leaseOwners?: ReadonlyMap<bigint, string>;
  /** Unowned escrows that waited out the spread deferral: claimed even when a peer owns fewer. */
  readonly due?: ReadonlySet<bigint>;
  /** Models whose deferred escrow a peer did not take lately: claimed without deferral, no hand-back to a peer. */
  readonly held?: ReadonlySet<string>;
}

export interface ClaimPlan {
  /**
   * Candidates in the order to try (SET NX may still lose a race); stop after `want` successes per
   * entry. A model may have two entries: what may be claimed at once, then what is claimed only
   * because its deferral ran out (`afterDeferral`: a peer owning fewer did not take it).
   */
  readonly claim: readonly {
    readonly modelId: string;
    readonly want: number;
    readonly escrows: readonly ActiveEscrow[];
    readonly afterDeferral?: boolean;
  }[];
  /** Unowned escrows this replica would claim but leaves to a peer owning fewer until they are due. */
  readonly deferred: readonly bigint[];
  /** Owned escrows to hand back: no longer active, or one over the share when the model is fully owned. */
  readonly release: readonly bigint[];
}

/** Rendezvous order: each replica prefers a different subset, so racing replicas rarely collide. */
function rank(replicaId: string, escrowId: bigint): string {
  return createHash('sha256').update(`${replicaId}/${escrowId}`).digest('hex');
}

export function planClaims(input: ClaimPlanInput): ClaimPlan {
  const replicas = Math.max(1, input.liveReplicas);
  const active = new Set(input.escrows.map((e) => e.escrowId));
  const release = [...input.mine].filter((id) => !active.has(id));
  const peers = input.peers ?? [];
  const owners = input.leaseOwners ?? new Map<bigint, string>();
  const due = input.due ?? new Set<bigint>();
  const byModel = new Map<string, ActiveEscrow[]>();
  for (const e of input.escrows) {
    const list = byModel.get(e.modelId) ?? [];
    list.push(e);
    byModel.set(e.modelId, list);
  }
  const claim: { modelId: string; want: number; escrows: ActiveEscrow[]; afterDeferral?: boolean }[] = [];
  const deferred: bigint[] = [];
  const byRank = (a: ActiveEscrow, b: ActiveEscrow) => {
    const ra = rank(input.replicaId, a.escrowId);
    const rb = rank(input.replicaId, b.escrowId);
    return ra < rb ? -1 : ra > rb ? 1 : 0;
  };
  for (const [modelId, escrows] of [...byModel].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const share = Math.ceil(escrows.length / replicas);
    const floor = Math.floor(escrows.length / replicas);
    const owned = escrows.filter((e) => input.mine.has(e.escrowId));
    const free = escrows.filter((e) => !input.leased.has(e.escrowId) && !input.faulted.has(e.escrowId));
    const overdue = free.filter((e) => input.overdue.has(e.escrowId));
    const shareLeft = Math.max(0, share - owned.length);
    const want = Math.max(shareLeft, overdue.length);
    // The peers' counts of this model; spreading applies only toward fresh peers, and not while held.
    const spread = peers.length > 0 && !input.held?.has(modelId);
    const counts = new Map(peers.map((p) => [p, 0]));
    if (spread) {
      for (const e of escrows) {
        const owner = owners.get(e.escrowId);
        if (owner !== undefined && counts.has(owner)) counts.set(owner, counts.get(owner)! + 1);
      }
    }
    const fewest = spread ? Math.min(...counts.values()) : Number.POSITIVE_INFINITY;
    // At once: up to the floor share, and past it while no peer owns fewer (up to one more than it).
    const atOnce = spread
      ? Math.min(shareLeft, Math.max(floor - owned.length, fewest + 1 - owned.length, 0))
      : shareLeft;
    if (want > 0 && free.length > 0) {
      // Overdue ones first (they waited longest), then by rendezvous rank.
      const ordered = [...free].sort((a, b) => {
        const od = Number(input.overdue.has(b.escrowId)) - Number(input.overdue.has(a.escrowId));
        return od !== 0 ? od : byRank(a, b);
      });
      if (atOnce > 0) claim.push({ modelId, want: atOnce, escrows: ordered });
      const waited = ordered.filter((e) => input.overdue.has(e.escrowId) || due.has(e.escrowId));
      const rest = Math.min(want - atOnce, waited.length);
      if (rest > 0) claim.push({ modelId, want: rest, escrows: waited, afterDeferral: spread });
      if (want > atOnce + rest) {
        for (const e of ordered) if (!waited.includes(e)) deferred.push(e.escrowId);
      }
    }
    // Rebalance only in a steady state (nothing of the model waits for an owner), one at a time.
    if (free.length === 0) {
      const over = owned.length > share;
      // Spreading: the replica owning the most (ties: the lowest id) hands one to a peer owning two
      // fewer; the peer claims it at once while this replica, still owning more, defers.
      const most = Math.max(0, ...counts.values());
      const top =
        owned.length > most ||
        (owned.length === most && [...counts].every(([p, n]) => n < most || input.replicaId < p));
      const spreadOut = spread && owned.length >= fewest + 2 && top;
      if (over || spreadOut) {
        const last = owned
          .map((e) => e.escrowId)
          .sort((a, b) => rank(input.replicaId, b).localeCompare(rank(input.replicaId, a)))[0];
        if (last !== undefined) release.push(last);
      }
    }
  }
  return { claim, deferred, release };
}
