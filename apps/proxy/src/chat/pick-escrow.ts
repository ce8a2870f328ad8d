// Pool routing among the escrows this replica owns (spec §1.5, §3.1, §8): the lowest
// in-flight per capacity weight among routable escrows of the model that can pay this request's
// reservation, skipping depleted ones (usable balance below 1,000,000) and those at their nonce
// limit (the session's canStartInference covers draining, faulted, finalizing and the nonce limit).
// A held escrow (pool-state.ts) is below the minimum by its owner's own numbers, so it is skipped as
// depleted until its reservations return.
//
// Funding verdicts (devshard session funding.ts): an escrow that cannot fund *this* request's
// reservation (`exceeds`) is passed over for the next escrow of the model and is not depleted; when
// none can fund it the client is told so (serve/attempt-race.ts, forward-to-owner.ts: 503
// `insufficient_escrow_funds`), with the most any of them can reserve. The balance here leaves out
// what the host txs waiting for the next diff return (a Finish gives back its unused reservation),
// which only the session counts: an escrow that looks short is therefore still tried when no other
// can take the request, and its session's verdict, taken before any nonce, decides.
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
import { DEPLETION_THRESHOLD } from '@gonka-gateway/shared';

export { DEPLETION_THRESHOLD };

/** Load units added while the group has a dominant host not (yet) blocked. */
export const DOMINANT_PENALTY = 0.5;
/** Load units added at a 100% mismatch share (scaled by the share). */
export const MISMATCH_PENALTY = 2;

export interface Reservation {
  readonly inputTokens: bigint;
  readonly maxTokens: bigint;
}

/**
 * `funds`: the escrow can pay this request (reservation at the floor-raised max_tokens + one fee);
 * `exceeds`: it cannot, but it is above the serving minimum; `depleted`: below the minimum;
 * `unknown`: the session is still opening.
 */
export type Funding = 'funds' | 'exceeds' | 'depleted' | 'unknown';

/** What this request reserves plus its diff's fee on the escrow, undefined while it opens. */
export function neededOn(e: OwnedEscrowInfo, r: Reservation): bigint | undefined {
  if (e.tokenPrice === undefined || e.feePerNonce === undefined) return undefined;
  const floor = e.maxTokensFloor ?? 0n;
  const maxTokens = r.maxTokens > floor ? r.maxTokens : floor;
  return (r.inputTokens + maxTokens) * e.tokenPrice + e.feePerNonce;
}

export function fundingOf(e: OwnedEscrowInfo, r: Reservation): Funding {
  const needed = neededOn(e, r);
  if (e.balance === undefined || needed === undefined) return 'unknown';
  if (e.balance < DEPLETION_THRESHOLD) return 'depleted';
  return e.balance >= needed ? 'funds' : 'exceeds';
}

export function canFund(e: OwnedEscrowInfo, r: Reservation): boolean {
  return fundingOf(e, r) === 'funds';
}

/** Escrows of the model that could start the request but cannot fund it (a 503 says so). */
export interface FundingShortfall {
  /** How many escrows cannot fund it. */
  readonly escrows: number;
  /** What the request needs on them (the least, if prices differ). */
  readonly needed: bigint;
  /** The most any of them could reserve now (balance less the fee). */
  readonly available: bigint;
}

/** Adds one escrow that cannot fund the request to a shortfall. */
export function addShortfall(
  s: FundingShortfall | undefined,
  needed: bigint,
  available: bigint,
): FundingShortfall {
  if (!s) return { escrows: 1, needed, available };
  return {
    escrows: s.escrows + 1,
    needed: needed < s.needed ? needed : s.needed,
    available: available > s.available ? available : s.available,
  };
}

/**
 * The owned escrows of the model, startable and not excluded, whose verdict for this request is
 * `exceeds`; undefined when there are none (nothing to say about funding).
 */
export function shortfallAmong(
  owned: readonly OwnedEscrowInfo[],
  modelId: string,
  r: Reservation,
  skip: ReadonlySet<bigint> = new Set(),
): FundingShortfall | undefined {
  let shortfall: FundingShortfall | undefined;
  for (const e of owned) {
    if (e.modelId !== modelId || !e.routable || !e.canStart || skip.has(e.escrowId)) continue;
    if (fundingOf(e, r) !== 'exceeds') continue;
    const fee = e.feePerNonce ?? 0n;
    const balance = e.balance ?? 0n;
    shortfall = addShortfall(shortfall, neededOn(e, r)!, balance > fee ? balance - fee : 0n);
  }
  return shortfall;
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
  // 0: funds it, no blocked host; 1: funds it, a blocked dominant host; 2: looks short of funds.
  let bestRank = 3;
  let bestScore = Number.POSITIVE_INFINITY;
  for (const e of owned) {
    if (e.modelId !== modelId || !e.routable || !e.canStart || exclude.has(e.escrowId)) continue;
    const funding = fundingOf(e, reservation);
    if (funding === 'depleted' || funding === 'unknown') continue;
    const rank = funding === 'exceeds' ? 2 : e.blockedHosts > 0 ? 1 : 0;
    if (rank > bestRank) continue;
    const load = capacityAware ? e.inFlight / Math.max(1, e.capacityWeight) : e.inFlight;
    const score = load + hostPenalty(e);
    if (rank < bestRank || score < bestScore) {
      best = e;
      bestRank = rank;
      bestScore = score;
    }
  }
  return best;
}
