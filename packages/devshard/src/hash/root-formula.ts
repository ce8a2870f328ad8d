// The outer state-root formula and the state-signature preimage (devshard-protocol.md §6, §2.4,
// chain-and-network.md §2.6 rules 4–5). The gateway, the devnet hosts and the devnet chain's settle
// check all use these functions, so they cannot disagree by copy.
import { type DevshardSettlementHostStats, encodeHostStats, ProtoWriter, sha256 } from '@gonka-gateway/chain';
import { u64be, utf8 } from './bytes.js';
import { sha256Parts } from './sha256.js';

/** Session phases (devshard-protocol.md §1); the value is the phase byte hashed into the root. */
export const SessionPhase = { Active: 0, Finalizing: 1, Settlement: 2 } as const;
export type SessionPhase = (typeof SessionPhase)[keyof typeof SessionPhase];

/** SHA-256 of HostStatsMapProto with one entry per slot, sorted by slot id. */
export function hostStatsHash(entries: readonly DevshardSettlementHostStats[]): Uint8Array {
  const sorted = [...entries].sort((a, b) => a.slotId - b.slotId);
  const w = new ProtoWriter();
  for (const entry of sorted) w.message(1, encodeHostStats(entry));
  return sha256(w.finish());
}

const tagHashes = new Map<string, Uint8Array>();

/** H(tag), remembered: a session has one tag and every root hashes it. */
function tagHash(tag: string): Uint8Array {
  let h = tagHashes.get(tag);
  if (!h) {
    h = sha256Parts(utf8(tag));
    if (tagHashes.size < 64) tagHashes.set(tag, h);
  }
  return h;
}

/** H(host_stats_hash ‖ u64be fees ‖ rest_hash ‖ H(tag) ‖ phase). */
export function composeStateRoot(input: {
  hostStatsHash: Uint8Array;
  fees: bigint;
  restHash: Uint8Array;
  tag: string;
  phase: SessionPhase;
}): Uint8Array {
  if (input.hostStatsHash.length !== 32 || input.restHash.length !== 32) {
    throw new RangeError('host_stats_hash and rest_hash must be 32 bytes');
  }
  return sha256Parts(
    input.hostStatsHash,
    u64be(input.fees),
    input.restHash,
    tagHash(input.tag),
    Uint8Array.of(input.phase),
  );
}

/** The root the chain recomputes at settlement: phase byte 0x02 over the payload's fields. */
export function settlementStateRoot(input: {
  hostStats: readonly DevshardSettlementHostStats[];
  fees: bigint;
  restHash: Uint8Array;
  tag: string;
}): Uint8Array {
  return composeStateRoot({
    hostStatsHash: hostStatsHash(input.hostStats),
    fees: input.fees,
    restHash: input.restHash,
    tag: input.tag,
    phase: SessionPhase.Settlement,
  });
}

/** StateSignatureContent{1 state_root, 2 escrow_id (decimal), 3 nonce}. */
export function encodeStateSignatureContent(
  stateRoot: Uint8Array,
  escrowId: string,
  nonce: bigint,
): Uint8Array {
  return new ProtoWriter().bytes(1, stateRoot).string(2, escrowId).uint64(3, nonce).finish();
}

/** The digest a host signs (and the chain recovers over) for a state signature. */
export function stateSignatureDigest(stateRoot: Uint8Array, escrowId: string, nonce: bigint): Uint8Array {
  return sha256(encodeStateSignatureContent(stateRoot, escrowId, nonce));
}
