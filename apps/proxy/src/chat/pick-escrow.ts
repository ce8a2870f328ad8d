// Pool routing among the escrows this replica owns (spec §1.5, §3.1, §8): the lowest
// in-flight per capacity weight among routable escrows of the model that can pay this request's
// reservation, skipping depleted ones (usable balance below 1,000,000) and those at their nonce
// limit (the session's canStartInference covers draining, faulted, finalizing and the nonce limit).
//
// Host quality (served-bytes verdicts, dominant hosts) orders what is left, never makes an
// unstartable escrow eligible:
// - an escrow with a blocked dominant host (it refused or timed out and cannot be outvoted) is a last
//   resort: every request there first burns that host's nonces for the fee (devshard
//   dominant-hosts.ts), so it is taken only when no escrow without one can take the request;
// - among the rest, the load is raised by a penalty in load units (a penalised escrow is taken when
//   the others are that much busier): DOMINANT_PENALTY while an unblocked dominant host is in the
//   group (it can refuse once and still be paid), MISMATCH_PENALTY × the share of served-bytes
//   verdicts that were `mismatch` (Finish hashes of bytes we never received, served-bytes.ts).
import type { OwnedEscrowInfo } from '@gonka-gateway/escrow-runtime';

/** Spec §3.1: below this usable balance an escrow is depleted and gets no new requests. */
export const DEPLETION_THRESHOLD = 1_000_000n;

/** Load units added while the group has a dominant host not (yet) blocked. */
export const DOMINANT_PENALTY = 0.5;
/** Load units added at a 100% mismatch share (scaled by the share). */
export const MISMATCH_PENALTY = 2;

export interface Reservation {
  readonly inputTokens: bigint;
  readonly maxTokens: bigint;
}

export function canFund(e: OwnedEscrowInfo, r: Reservation): boolean {
  if (e.balance === undefined || e.tokenPrice === undefined || e.feePerNonce === undefined) return false;
  if (e.balance < DEPLETION_THRESHOLD) return false;
  const floor = e.maxTokensFloor ?? 0n;
  const maxTokens = r.maxTokens > floor ? r.maxTokens : floor;
  return e.balance >= (r.inputTokens + maxTokens) * e.tokenPrice + e.feePerNonce;
}

/** The escrow's routing penalty in load units (0 for a clean group). */
export function hostPenalty(e: OwnedEscrowInfo): number {
  const verdicts = e.served.match + e.served.mismatch + e.served.truncated;
  const mismatchShare = verdicts === 0 ? 0 : e.served.mismatch / verdicts;
  return (e.dominantHosts > e.blockedHosts ? DOMINANT_PENALTY : 0) + MISMATCH_PENALTY * mismatchShare;
}

export function pickOwned(
  owned: readonly OwnedEscrowInfo[],
  modelId: string,
  reservation: Reservation,
  exclude: ReadonlySet<bigint> = new Set(),
  /** DEVSHARD_CAPACITY_AWARE_LIMITS: in-flight per capacity weight (on) or in-flight alone (off). */
  capacityAware = true,
): OwnedEscrowInfo | undefined {
  let best: OwnedEscrowInfo | undefined;
  let bestBlocked = true;
  let bestScore = Number.POSITIVE_INFINITY;
  for (const e of owned) {
    if (e.modelId !== modelId || !e.routable || !e.canStart || exclude.has(e.escrowId)) continue;
    if (!canFund(e, reservation)) continue;
    const blocked = e.blockedHosts > 0;
    if (blocked && !bestBlocked) continue;
    const load = capacityAware ? e.inFlight / Math.max(1, e.capacityWeight) : e.inFlight;
    const score = load + hostPenalty(e);
    if ((bestBlocked && !blocked) || score < bestScore) {
      best = e;
      bestBlocked = blocked;
      bestScore = score;
    }
  }
  return best;
}
