// State root of a session (devshard-protocol.md §6) with the profile's rest_hash composition. Record
// entries are cached on the records, and live_hash is reused while the live map is unchanged.
import {
  composeRestHash,
  heightSyncHash,
  inferencesHashV2,
  liveRecordsHash,
  warmKeysHash,
} from '../hash/rest-hash.js';
import { composeStateRoot, hostStatsHash } from '../hash/state-root.js';
import type { InferenceRecord, SessionState, WorkingState } from './types.js';

/** Live records in ascending id (the map is kept in that order; sorted again if it is not). */
export function liveRecordsAscending(inferences: ReadonlyMap<bigint, InferenceRecord>): InferenceRecord[] {
  const records = [...inferences.values()];
  for (let i = 1; i < records.length; i++) {
    if (records[i - 1]!.id >= records[i]!.id) {
      return records.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    }
  }
  return records;
}

export function liveHashOf(inferences: ReadonlyMap<bigint, InferenceRecord>): Uint8Array {
  return liveRecordsHash(liveRecordsAscending(inferences).map((r) => r.entry));
}

export function hostStatsHashOf(s: WorkingState): Uint8Array {
  return hostStatsHash(s.hostStats.map((h, slotId) => ({ slotId, ...h })));
}

/** rest_hash: v5 appends height_sync_hash, v4 does not (§11). */
export function restHashOf(s: WorkingState, liveHash: Uint8Array): Uint8Array {
  return composeRestHash({
    balance: s.balance,
    inferencesHash: inferencesHashV2(s.sealedAcc, liveHash),
    warmKeysHash: warmKeysHash(s.warmKeys),
    ...(s.profile.restHashWithHeightSync ? { heightSyncHash: heightSyncHash(s.heightSync) } : {}),
  });
}

export function stateRootOf(s: WorkingState, liveHash: Uint8Array): Uint8Array {
  return composeStateRoot({
    hostStatsHash: hostStatsHashOf(s),
    fees: s.fees,
    restHash: restHashOf(s, liveHash),
    tag: s.tag,
    phase: s.phase,
  });
}

/** Seals a working state into a SessionState with its root; `previous` lends its live_hash. */
export function withRoot(s: WorkingState, previous?: SessionState): SessionState {
  const liveHash =
    previous && previous.inferences === s.inferences ? previous.liveHash : liveHashOf(s.inferences);
  return Object.freeze({ ...s, liveHash, root: stateRootOf(s, liveHash) });
}
