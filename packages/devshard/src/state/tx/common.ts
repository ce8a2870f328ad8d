// Helpers shared by the transaction rules of devshard-protocol.md §5.4.
import { DevshardError, DevshardErrorCode } from '../../errors.js';
import { idLogHas } from '../id-log.js';
import { liveRecordsOf } from '../live-records.js';
import type { HostStats, InferenceRecord, WorkingState } from '../types.js';

const U64_MAX = 0xffff_ffff_ffff_ffffn;

/** (a + b) × price with the reference's uint64 overflow checks (`cost overflow`). */
export function tokenCost(a: bigint, b: bigint, price: bigint): bigint {
  const sum = a + b;
  if (sum > U64_MAX) throw new DevshardError(DevshardErrorCode.CostOverflow);
  const cost = sum * price;
  if (cost > U64_MAX) throw new DevshardError(DevshardErrorCode.CostOverflow);
  return cost;
}

/**
 * The live record for a lifecycle tx (confirm, finish, timeout, error miss): a sealed id is an
 * `invalid transition`, an id never started is `inference not found`.
 */
export function liveRecord(s: WorkingState, id: bigint): InferenceRecord {
  const rec = s.inferences.get(id);
  if (rec) return rec;
  if (idLogHas(s.startedIds, id)) {
    throw new DevshardError(DevshardErrorCode.InvalidTransition, `inference ${id} is sealed`);
  }
  throw new DevshardError(DevshardErrorCode.InferenceNotFound, `inference ${id}`);
}

/** The live record for a validation or vote: a sealed id is `inference sealed` (late validation). */
export function liveRecordForValidation(s: WorkingState, id: bigint): InferenceRecord {
  const rec = s.inferences.get(id);
  if (rec) return rec;
  if (idLogHas(s.startedIds, id))
    throw new DevshardError(DevshardErrorCode.InferenceSealed, `inference ${id}`);
  throw new DevshardError(DevshardErrorCode.InferenceNotFound, `inference ${id}`);
}

/**
 * The state with `rec` live. The live map is persistent (state/live-records.ts): this copies one
 * chunk, not the map, and `s` stays valid, so a rejected tx or diff needs no undo.
 */
export function withRecord(s: WorkingState, rec: InferenceRecord): WorkingState {
  return { ...s, inferences: liveRecordsOf(s.inferences).with(rec) };
}

export function withHostStats(
  s: WorkingState,
  slot: number,
  change: (h: HostStats) => Partial<HostStats>,
): WorkingState {
  const hostStats = [...s.hostStats];
  hostStats[slot] = Object.freeze({ ...hostStats[slot]!, ...change(hostStats[slot]!) });
  return { ...s, hostStats: Object.freeze(hostStats) };
}

/** Host cost minus `amount`, floored at zero (invalidation and error-miss refunds). */
export function costWithout(cost: bigint, amount: bigint): bigint {
  return cost < amount ? 0n : cost - amount;
}

export function slotAddress(s: WorkingState, slot: number): string {
  const address = s.group.slots[slot];
  if (address === undefined) throw new DevshardError(DevshardErrorCode.SlotNotInGroup, `slot ${slot}`);
  return address;
}

export function requireEscrowId(s: WorkingState, escrowId: string): void {
  if (escrowId !== s.escrowId) {
    throw new DevshardError(DevshardErrorCode.EscrowIdMismatch, `expected ${s.escrowId}, got ${escrowId}`);
  }
}

/** v5 stamps count only when the block hash is present (§5.4 StampPresent). */
export function stamped(s: WorkingState, hash: Uint8Array): boolean {
  return s.profile.heightStamps && hash.length > 0;
}
