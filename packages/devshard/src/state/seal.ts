// Sealing (devshard-protocol.md §5.6): records leave the live map and are folded, in ascending id,
// into sealed_acc = H(acc ‖ u64be(seal_nonce) ‖ u64be(id) ‖ entry). Both gates read only state, so
// the composer, every host and a replay seal the same set at the same nonce.
import { foldSealedAcc } from '../hash/rest-hash.js';
import { liveRecordsOf } from './live-records.js';
import { entryToHash, Record, storedInt, updateRecord } from './record.js';
import { liveRecordsAscending } from './root.js';
import { withHostStats } from './tx/common.js';
import { type InferenceRecord, InferenceStatus, type WorkingState } from './types.js';

export interface SealedRecord {
  readonly id: bigint;
  readonly sealNonce: bigint;
  /** The record as folded (after the settlement default, for a drain). */
  readonly record: InferenceRecord;
}

const DEFAULT_AUTO_SEAL_INTERVAL = 150n;
/** The state clock scans the 3N highest live ids (reference stateClockWindowFactor). */
const STATE_CLOCK_WINDOW_FACTOR = 3;

export function autoSealInterval(s: WorkingState): bigint {
  return s.config.autoSealEveryNNonces === 0n ? DEFAULT_AUTO_SEAL_INTERVAL : s.config.autoSealEveryNNonces;
}

export function isAutoSealNonce(s: WorkingState, nonce: bigint): boolean {
  return nonce % autoSealInterval(s) === 0n;
}

/** max confirmed_at (> 0) over the 3N highest live ids; undefined when none is confirmed. */
export function stateClock(records: readonly InferenceRecord[], groupSize: number): bigint | undefined {
  let clock: bigint | undefined;
  const window = records.slice(Math.max(0, records.length - groupSize * STATE_CLOCK_WINDOW_FACTOR));
  for (const r of window)
    if (r.confirmedAt > 0n && (clock === undefined || r.confirmedAt > clock)) clock = r.confirmedAt;
  return clock;
}

function fold(s: WorkingState, records: readonly InferenceRecord[], sealNonce: bigint) {
  let acc = s.sealedAcc;
  const sealed: SealedRecord[] = [];
  for (const record of records) {
    acc = foldSealedAcc(acc, sealNonce, record.id, entryToHash(record));
    sealed.push({ id: record.id, sealNonce, record });
  }
  const inferences = liveRecordsOf(s.inferences).without(records.map((r) => r.id));
  return { state: { ...s, sealedAcc: acc, inferences }, sealed };
}

const TERMINAL: ReadonlySet<number> = new Set([
  InferenceStatus.Validated,
  InferenceStatus.Invalidated,
  InferenceStatus.TimedOut,
]);

/**
 * Auto-seal at `sealNonce` (Active only; the caller checks the interval). Eligible: terminal records
 * past the nonce gate (seal_nonce ≥ id + grace_nonces); Finished records past both the nonce gate and
 * the clock gate (state_clock − confirmed_at ≥ grace_seconds [+ execution_timeout in v5]). Nothing
 * seals while the state clock is unknown.
 */
export function autoSeal(
  s: WorkingState,
  sealNonce: bigint,
): { state: WorkingState; sealed: SealedRecord[] } {
  if (s.inferences.size === 0) return { state: s, sealed: [] };
  const live = liveRecordsOf(s.inferences);
  const groupSize = s.group.slots.length;
  const clock = stateClock(live.newest(groupSize * STATE_CLOCK_WINDOW_FACTOR), groupSize);
  if (clock === undefined) return { state: s, sealed: [] };
  const nonNegative = (v: bigint) => (v < 0n ? 0n : v);
  const requiredSeconds =
    nonNegative(s.config.sealGraceSeconds) +
    (s.profile.finishedSealAddsExecutionTimeout ? nonNegative(s.config.executionTimeout) : 0n);
  const eligible: InferenceRecord[] = [];
  // Nonce gate: seal_nonce ≥ id + grace_nonces, i.e. id ≤ seal_nonce − grace_nonces; clock gate:
  // state_clock − confirmed_at ≥ required, i.e. confirmed_at ≤ state_clock − required. Both bounds
  // are taken once and compared with the records' stored ids and times (numbers while safe, exact
  // either way: a number and a bigint compare by value), so the pass makes no bigint per record
  // (every record past the nonce gate is read each interval while none is sealable).
  const idLimit = storedInt(sealNonce - s.config.sealGraceNonces);
  const confirmedLimit = storedInt(clock - requiredSeconds);
  // Ascending ids: once one id is inside the nonce gate, every later one is too, so the pass stops
  // there instead of reading every live record each interval (all of them, while none is sealable).
  live.scanAscending((r) => {
    if (Record.idKey(r) > idLimit) return false;
    const status = r.status;
    if (
      TERMINAL.has(status) ||
      (status === InferenceStatus.Finished && Record.confirmedAtKey(r) <= confirmedLimit)
    ) {
      eligible.push(r);
    }
    return true;
  });
  if (eligible.length === 0) return { state: s, sealed: [] };
  return fold(s, eligible, sealNonce);
}

/**
 * Settlement drain, once at Finalizing → Settlement: Pending and Started records become Finished
 * and charge their full reservation to the executor (no miss, no balance change); everything else
 * seals as it is. The live map ends empty.
 */
export function drainLive(
  s: WorkingState,
  sealNonce: bigint,
): { state: WorkingState; sealed: SealedRecord[] } {
  let state = s;
  const settled: InferenceRecord[] = [];
  for (const r of liveRecordsAscending(s.inferences)) {
    if (r.status === InferenceStatus.Pending || r.status === InferenceStatus.Started) {
      state = withHostStats(state, r.executorSlot, (h) => ({ cost: h.cost + r.reservedCost }));
      settled.push(updateRecord(r, { status: InferenceStatus.Finished, actualCost: r.reservedCost }));
    } else {
      settled.push(r);
    }
  }
  return fold(state, settled, sealNonce);
}
