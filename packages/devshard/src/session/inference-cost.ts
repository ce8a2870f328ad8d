// What one inference costs the escrow, read from the state replica (the usage ledger's cost).
// The Finish fixes the executor's charge (devshard-protocol.md §5.4): min(tokens × price, reserved).
// Before it is applied the escrow holds the reservation, which is also what Settlement charges a
// record still Pending/Started (§5.6); a timed-out, error-missed or invalidated one is refunded.
import { type InferenceRecord, InferenceStatus, type SessionState } from '../state/types.js';

export interface InferenceCost {
  /** ngonka. */
  readonly cost: bigint;
  /** True once the Finish (or the timeout) is applied in a persisted diff; false = the reservation. */
  readonly final: boolean;
}

/** Undefined when the state has no live record for `nonce` (never started here, or already sealed). */
export function inferenceCostOf(state: SessionState, nonce: bigint): InferenceCost | undefined {
  const r: InferenceRecord | undefined = state.inferences.get(nonce);
  return r ? recordCost(r) : undefined;
}

/** The cost of one record, live or as sealed (a sealed record's is what settlement pays for it). */
export function recordCost(r: InferenceRecord): InferenceCost {
  switch (r.status) {
    case InferenceStatus.Pending:
    case InferenceStatus.Started:
      return { cost: r.reservedCost, final: false };
    case InferenceStatus.TimedOut:
    case InferenceStatus.Invalidated:
      // ErrorMiss and an invalid vote return actualCost to the balance but leave it in the record.
      return { cost: 0n, final: true };
    default:
      // Finished, Challenged, Validated: the Finish's charge (a later vote may still refund it).
      return { cost: r.actualCost, final: true };
  }
}

/**
 * The reservations of the inferences still Pending or Started: what returns to the balance, less
 * their actual cost, when their Finish or timeout is applied (§5.4). The pool entry publishes it, so
 * the balance check can hold an escrow those returns may bring back above the serving minimum.
 */
export function reservedTotal(state: SessionState): bigint {
  let total = 0n;
  for (const r of state.inferences.values()) {
    if (r.status === InferenceStatus.Pending || r.status === InferenceStatus.Started) total += r.reservedCost;
  }
  return total;
}
