// Which escrows a replica claims and which it gives back on one claim pass (architecture §2.2):
// per model, a replica owns at most ceil(escrows of the model / live replicas), so ownership stays
// balanced, and the shares of all live replicas always cover every escrow. Pure, so the rules are
// tested without Redis.
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
}

export interface ClaimPlan {
  /** Candidates in the order to try (SET NX may still lose a race); stop after `want` successes per model. */
  readonly claim: readonly {
    readonly modelId: string;
    readonly want: number;
    readonly escrows: readonly ActiveEscrow[];
  }[];
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
  const byModel = new Map<string, ActiveEscrow[]>();
  for (const e of input.escrows) {
    const list = byModel.get(e.modelId) ?? [];
    list.push(e);
    byModel.set(e.modelId, list);
  }
  const claim: { modelId: string; want: number; escrows: ActiveEscrow[] }[] = [];
  for (const [modelId, escrows] of [...byModel].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const share = Math.ceil(escrows.length / replicas);
    const owned = escrows.filter((e) => input.mine.has(e.escrowId));
    const free = escrows.filter((e) => !input.leased.has(e.escrowId) && !input.faulted.has(e.escrowId));
    const overdue = free.filter((e) => input.overdue.has(e.escrowId));
    const want = Math.max(share - owned.length, overdue.length);
    if (want > 0 && free.length > 0) {
      // Overdue ones first (they waited longest), then by rendezvous rank.
      const ordered = [...free].sort((a, b) => {
        const od = Number(input.overdue.has(b.escrowId)) - Number(input.overdue.has(a.escrowId));
        if (od !== 0) return od;
        const ra = rank(input.replicaId, a.escrowId);
        const rb = rank(input.replicaId, b.escrowId);
        return ra < rb ? -1 : ra > rb ? 1 : 0;
      });
      claim.push({ modelId, want, escrows: ordered });
    }
    // Rebalance only in a steady state (nothing of the model waits for an owner), one at a time.
    if (free.length === 0 && owned.length > share) {
      const last = owned
        .map((e) => e.escrowId)
        .sort((a, b) => rank(input.replicaId, b).localeCompare(rank(input.replicaId, a)))[0];
      if (last !== undefined) release.push(last);
    }
  }
  return { claim, release };
}
