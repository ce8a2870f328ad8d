// The settlement proof check (chain-and-network.md §2.6 "Settle" rules 1–8, devshard-protocol.md
// §8.4), in the keeper's order: settled, settler = creator, version, nonce, state root, signatures,
// quorum, per-slot bounds, Σcost + fees ≤ amount.

import type { DevshardEscrowParams } from '@gonka-gateway/chain';
import { type MsgSettleDevshardEscrow, recoverAddress } from '@gonka-gateway/chain';
import { settlementStateRoot, stateSignatureDigest } from '@gonka-gateway/devshard';
import { InferenceErrors } from './errors.js';
import type { EscrowRow } from './stores.js';

const MAX_VERSION_LENGTH = 128;

export const quorumFor = (slotCount: number): number => Math.floor((2 * slotCount) / 3) + 1;

/**
 * How many inferences a slot could have been given by `nonce`: inference n runs on slot n mod S and
 * nonce 0 is never an inference, so slot 0 first works at nonce S and slot k at nonce k (§8.4).
 */
export function assignedUpperBound(nonce: bigint, slotCount: number, slotId: number): bigint {
  if (slotId >= slotCount) {
    throw InferenceErrors.invalidSettlement(`slot ${slotId} out of range for slot count ${slotCount}`);
  }
  const first = BigInt(slotId === 0 ? slotCount : slotId);
  if (nonce < first) return 0n;
  return 1n + (nonce - first) / BigInt(slotCount);
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

export function verifySettlement(
  escrow: EscrowRow,
  msg: MsgSettleDevshardEscrow,
  params: DevshardEscrowParams,
  isWarmKey: (granter: string, grantee: string) => boolean,
): void {
  const bad = InferenceErrors.invalidSettlement;
  if (escrow.settled) throw InferenceErrors.escrowSettled(`escrow ${escrow.id} already settled`);
  if (msg.settler !== escrow.creator) {
    throw bad(`settler ${msg.settler} is not the escrow creator ${escrow.creator}`);
  }
  if (msg.version === '') throw bad('version is required');
  if (msg.nonce > BigInt(params.maxNonce)) throw bad(`nonce ${msg.nonce} exceeds maximum ${params.maxNonce}`);
  if (msg.version.length > MAX_VERSION_LENGTH)
    throw bad(`version exceeds maximum length of ${MAX_VERSION_LENGTH}`);
  const approved = params.approvedVersions;
  if (approved.length > 0 && !approved.some((v) => v.name === msg.version)) {
    throw bad(
      `settlement version ${JSON.stringify(msg.version)} is not listed in devshard_escrow_params.approved_versions`,
    );
  }

  // Root = sha256(host_stats_hash ‖ u64be fees ‖ rest_hash ‖ sha256(version) ‖ 0x02). The shared
  // formula needs a 32-byte rest_hash; the real keeper concatenates any length, but no honest
  // session produces another length, so the devnet counts that as a mismatch (stricter).
  if (msg.stateRoot.length !== 32) throw bad(`state_root must be 32 bytes, got ${msg.stateRoot.length}`);
  let expected: Uint8Array | null = null;
  try {
    expected = settlementStateRoot({
      hostStats: msg.hostStats,
      fees: msg.fees,
      restHash: msg.restHash,
      tag: msg.version,
    });
  } catch {
    expected = null;
  }
  if (!expected || !equalBytes(expected, msg.stateRoot)) throw bad('state_root mismatch');

  const digest = stateSignatureDigest(msg.stateRoot, escrow.id.toString(), msg.nonce);
  const badSig = InferenceErrors.invalidSettlementSignature;
  const seenSlots = new Set<number>();
  let votes = 0;
  for (const sig of msg.signatures) {
    if (seenSlots.has(sig.slotId)) throw badSig(`duplicate signature for slot ${sig.slotId}`);
    seenSlots.add(sig.slotId);
    if (sig.slotId >= escrow.slots.length) throw badSig(`slot_id ${sig.slotId} out of range`);
    const expectedAddr = escrow.slots[sig.slotId]!;
    if (sig.signature.length !== 65) {
      throw badSig(
        `failed to recover address for slot ${sig.slotId}: signature must be 65 bytes, got ${sig.signature.length}`,
      );
    }
    const recovered = recoverAddress(digest, sig.signature);
    if (recovered === null)
      throw badSig(`failed to recover address for slot ${sig.slotId}: ecrecover failed`);
    if (recovered !== expectedAddr && !isWarmKey(expectedAddr, recovered)) {
      throw badSig(`signature for slot ${sig.slotId} recovered ${recovered}, expected ${expectedAddr}`);
    }
    votes++;
  }
  const required = quorumFor(escrow.slots.length);
  if (votes < required)
    throw InferenceErrors.insufficientQuorum(`insufficient quorum: ${votes} slot votes, need ${required}`);

  if (escrow.slots.length === 0) throw bad('no slots in escrow');
  const seenStats = new Set<number>();
  let totalCost = 0n;
  for (const hs of msg.hostStats) {
    if (seenStats.has(hs.slotId)) throw bad(`duplicate host_stats slot_id ${hs.slotId}`);
    seenStats.add(hs.slotId);
    const assigned = assignedUpperBound(msg.nonce, escrow.slots.length, hs.slotId);
    if (BigInt(hs.missed) > assigned) {
      throw bad(`slot ${hs.slotId} missed count ${hs.missed} exceeds assigned per slot ${assigned}`);
    }
    const completed = assigned - BigInt(hs.missed);
    if (BigInt(hs.invalid) > completed) {
      throw bad(`slot ${hs.slotId} invalid count ${hs.invalid} exceeds completed per slot ${completed}`);
    }
    totalCost += hs.cost;
  }
  const totalDebit = totalCost + msg.fees;
  if (totalDebit > escrow.amount) {
    throw bad(
      `total debit ${totalDebit} (cost ${totalCost} + fees ${msg.fees}) exceeds escrow amount ${escrow.amount}`,
    );
  }
}
