// rest_hash and its components (devshard-protocol.md §6). The composition depends on the session's
// protocol profile: v5 appends height_sync_hash, v4.x does not (§11).

import { u32be, u64be, utf8 } from './bytes.js';
import { sha256Parts } from './sha256.js';

/** The height-sync commit fields hashed in v5 (§5.1); all zero for a gateway that never forces turns. */
export interface HeightSyncCommit {
  readonly forcedStart: bigint;
  readonly forcedEnd: bigint;
  readonly swallowUntil: bigint;
  readonly swallowFe: bigint;
  readonly turnK: bigint;
  readonly turnSlots: bigint;
  readonly reason: string;
}

export const EMPTY_HEIGHT_SYNC: HeightSyncCommit = Object.freeze({
  forcedStart: 0n,
  forcedEnd: 0n,
  swallowUntil: 0n,
  swallowFe: 0n,
  turnK: 0n,
  turnSlots: 0n,
  reason: '',
});

const EMPTY = new Uint8Array(0);

/** H(u64be × 6 ‖ u32be len(reason) ‖ reason); the all-zero commit hashes 52 zero bytes. */
export function heightSyncHash(h: HeightSyncCommit): Uint8Array {
  const reason = utf8(h.reason);
  return sha256Parts(
    u64be(h.forcedStart),
    u64be(h.forcedEnd),
    u64be(h.swallowUntil),
    u64be(h.swallowFe),
    u64be(h.turnK),
    u64be(h.turnSlots),
    u32be(reason.length),
    reason,
  );
}

/** H("") without bindings; else H(over slots ascending: u32be slot ‖ u32be len ‖ address). */
export function warmKeysHash(warmKeys: ReadonlyMap<number, string>): Uint8Array {
  if (warmKeys.size === 0) return sha256Parts(EMPTY);
  const slots = [...warmKeys.keys()].sort((a, b) => a - b);
  const parts: Uint8Array[] = [];
  for (const slot of slots) {
    const addr = utf8(warmKeys.get(slot)!);
    parts.push(u32be(slot), u32be(addr.length), addr);
  }
  return sha256Parts(...parts);
}

/** Bytes of one InferencesMapProto field-1 entry: `0a ‖ varint(len) ‖ entry`. */
export function framedEntryLength(length: number): number {
  let n = 2;
  for (let v = length; v >= 0x80; v = Math.floor(v / 128)) n++;
  return n + length;
}

/** Writes `0a ‖ varint(len) ‖ entry` into `buf` at `at`; returns the offset after it. */
export function writeFramedEntry(buf: Uint8Array, at: number, e: Uint8Array): number {
  buf[at++] = 0x0a;
  let v = e.length;
  while (v >= 0x80) {
    buf[at++] = (v & 0x7f) | 0x80;
    v = Math.floor(v / 128);
  }
  buf[at++] = v;
  buf.set(e, at);
  return at + e.length;
}

/**
 * live_hash: H of InferencesMapProto, i.e. every entry as field 1 (`0a ‖ varint(len) ‖ entry`) in the
 * order given, which must be ascending inference id. No records hashes the empty string. Written
 * into one buffer and hashed once: this runs on every diff over every live record.
 */
export function liveRecordsHash(entriesAscending: readonly Uint8Array[]): Uint8Array {
  let total = 0;
  for (const e of entriesAscending) total += framedEntryLength(e.length);
  const buf = new Uint8Array(total);
  let at = 0;
  for (const e of entriesAscending) at = writeFramedEntry(buf, at, e);
  return sha256Parts(buf);
}

/** inferences_hash_v2 = H(sealed_acc32 ‖ live_hash). */
export function inferencesHashV2(sealedAcc: Uint8Array, liveHash: Uint8Array): Uint8Array {
  if (sealedAcc.length !== 32 || liveHash.length !== 32) throw new RangeError('32-byte inputs required');
  return sha256Parts(sealedAcc, liveHash);
}

/** `out = H(acc ‖ u64be(seal_nonce) ‖ u64be(id) ‖ entry)` (§5.6). */
export function foldSealedAcc(acc: Uint8Array, sealNonce: bigint, id: bigint, entry: Uint8Array): Uint8Array {
  return sha256Parts(acc, u64be(sealNonce), u64be(id), entry);
}

/** rest_hash = H(u64be balance ‖ inferences_hash_v2 ‖ warm_keys_hash [‖ height_sync_hash]). */
export function composeRestHash(input: {
  balance: bigint;
  inferencesHash: Uint8Array;
  warmKeysHash: Uint8Array;
  /** Present for v5 composition, absent for v4. */
  heightSyncHash?: Uint8Array;
}): Uint8Array {
  const parts = [u64be(input.balance), input.inferencesHash, input.warmKeysHash];
  if (input.heightSyncHash) parts.push(input.heightSyncHash);
  return sha256Parts(...parts);
}
