// State root of a session (devshard-protocol.md §6) with the profile's rest_hash composition. The
// live_hash comes from the live map itself (incremental, state/live-records.ts); host stats are
// hashed from per-slot entries cached on their frozen values and the height-sync commit once per
// value, so a diff pays only for what it changed plus the fixed outer hashes.

import { encodeHostStats, ProtoWriter } from '@gonka-gateway/chain';
import {
  composeRestHash,
  heightSyncHash,
  inferencesHashV2,
  liveRecordsHash,
  warmKeysHash,
} from '../hash/rest-hash.js';
import { composeStateRoot } from '../hash/root-formula.js';
import { sha256Parts } from '../hash/sha256.js';
import { LiveRecords, liveRecordsOf } from './live-records.js';
import type { HostStats, InferenceRecord, SessionState, WorkingState } from './types.js';

/** Live records in ascending id. */
export function liveRecordsAscending(inferences: ReadonlyMap<bigint, InferenceRecord>): InferenceRecord[] {
  if (inferences instanceof LiveRecords) return inferences.ascending();
  return [...inferences.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

export function liveHashOf(inferences: ReadonlyMap<bigint, InferenceRecord>): Uint8Array {
  if (inferences instanceof LiveRecords) return inferences.liveHash();
  return liveRecordsHash(liveRecordsAscending(inferences).map((r) => r.entry));
}

/** Component hashes by the (immutable) value they hash: a new value is a new key. */
function memo<K extends object>(fn: (k: K) => Uint8Array): (k: K) => Uint8Array {
  const cache = new WeakMap<K, Uint8Array>();
  return (k) => {
    let h = cache.get(k);
    if (!h) {
      h = fn(k);
      cache.set(k, h);
    }
    return h;
  };
}

/**
 * HostStatsMapProto entry of one slot (`0a ‖ len ‖ HostStatsProto`), cached per (stats value, slot):
 * a Finish replaces one slot's frozen stats, so only that entry is encoded again.
 */
const slotEntries = new WeakMap<HostStats, Map<number, Uint8Array>>();

function slotEntry(h: HostStats, slotId: number): Uint8Array {
  let bySlot = slotEntries.get(h);
  if (!bySlot) {
    bySlot = new Map();
    slotEntries.set(h, bySlot);
  }
  let entry = bySlot.get(slotId);
  if (!entry) {
    entry = new ProtoWriter().message(1, encodeHostStats({ slotId, ...h })).finish();
    bySlot.set(slotId, entry);
  }
  return entry;
}

/** The hostStatsHash (§6) of slots 0..N−1 in order: the same bytes, hashed without re-encoding. */
const hostStatsHashMemo = memo((hostStats: WorkingState['hostStats']) =>
  sha256Parts(...hostStats.map((h, slotId) => slotEntry(h, slotId))),
);
const heightSyncHashMemo = memo(heightSyncHash);

export function hostStatsHashOf(s: WorkingState): Uint8Array {
  return hostStatsHashMemo(s.hostStats);
}

/** warm_keys_hash without bindings (§6): only ever read, as a hash input. */
const NO_WARM_KEYS_HASH = warmKeysHash(new Map());

/** rest_hash: v5 appends height_sync_hash, v4 does not (§11). */
export function restHashOf(s: WorkingState, liveHash: Uint8Array): Uint8Array {
  return composeRestHash({
    balance: s.balance,
    inferencesHash: inferencesHashV2(s.sealedAcc, liveHash),
    // Warm keys are a Map (mutable at run time): hashed each time, at most one entry per slot;
    // none bound (the usual case) is H(""), a constant.
    warmKeysHash: s.warmKeys.size === 0 ? NO_WARM_KEYS_HASH : warmKeysHash(s.warmKeys),
    ...(s.profile.restHashWithHeightSync ? { heightSyncHash: heightSyncHashMemo(s.heightSync) } : {}),
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

/** Seals a working state into a SessionState with its root (the live map kept as LiveRecords). */
export function withRoot(s: WorkingState, _previous?: SessionState): SessionState {
  const inferences = liveRecordsOf(s.inferences);
  const liveHash = inferences.liveHash();
  const withLive = inferences === s.inferences ? s : { ...s, inferences };
  return Object.freeze({ ...withLive, liveHash, root: stateRootOf(withLive, liveHash) });
}
