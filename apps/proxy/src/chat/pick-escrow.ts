// Pool routing among the escrows this replica owns (spec §1.5, §3.1, §8; issue 11 §5): the lowest
// in-flight per capacity weight among routable escrows of the model that can pay this request's
// reservation, skipping depleted ones (usable balance below 1,000,000) and those at their nonce
// limit (the session's canStartInference covers draining, faulted, finalizing and the nonce limit).
import type { OwnedEscrowInfo } from '@gonka-gateway/escrow-runtime';

/** Spec §3.1: below this usable balance an escrow is depleted and gets no new requests. */
export const DEPLETION_THRESHOLD = 1_000_000n;

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

export function pickOwned(
  owned: readonly OwnedEscrowInfo[],
  modelId: string,
  reservation: Reservation,
  exclude: ReadonlySet<bigint> = new Set(),
  /** DEVSHARD_CAPACITY_AWARE_LIMITS: in-flight per capacity weight (on) or in-flight alone (off). */
  capacityAware = true,
): OwnedEscrowInfo | undefined {
  let best: OwnedEscrowInfo | undefined;
  let bestLoad = Number.POSITIVE_INFINITY;
  for (const e of owned) {
    if (e.modelId !== modelId || !e.routable || !e.canStart || exclude.has(e.escrowId)) continue;
    if (!canFund(e, reservation)) continue;
    const load = capacityAware ? e.inFlight / Math.max(1, e.capacityWeight) : e.inFlight;
    if (load < bestLoad) {
      best = e;
      bestLoad = load;
    }
  }
  return best;
}
