// Diff user signature (devshard-protocol.md §2.4): Sign(DiffContent{nonce, txs, escrow_id,
// post_state_root}) by the escrow creator; hosts accept exactly the creator address (no warm keys).
import { type PrivateKey, ProtoWriter } from '@gonka-gateway/chain';
import type { EncodedTx } from '../proto/devshard-tx.js';
import { diffTxsBlob } from '../proto/diff-content.js';
import { defaultRecover, type RecoverFn, recoverPreimageSigner, signPreimage } from './primitive.js';

export interface UnsignedDiff {
  readonly nonce: bigint;
  readonly txs: readonly EncodedTx[];
  /** Empty = omitted (sent without a root, §12 #1). */
  readonly postStateRoot: Uint8Array;
}

export interface SignedDiff extends UnsignedDiff {
  readonly userSig: Uint8Array;
}

/**
 * DiffContent{nonce, txs, escrow_id, post_state_root}: fields in ascending order, each written on
 * its own, so it is the DiffJSON `txs` blob (fields 1–2, encoded once per diff: diffTxsBlob)
 * followed by fields 3–4 — the bytes encodeDiffContent gives for all four (recipes.test.ts).
 */
export function diffSigningBytes(escrowId: string, diff: UnsignedDiff): Uint8Array {
  const head = diffTxsBlob(diff.nonce, diff.txs);
  const tail = new ProtoWriter().string(3, escrowId).bytes(4, diff.postStateRoot).finish();
  const out = new Uint8Array(head.length + tail.length);
  out.set(head, 0);
  out.set(tail, head.length);
  return out;
}

export function signDiff(key: PrivateKey, escrowId: string, diff: UnsignedDiff): SignedDiff {
  return { ...diff, userSig: signPreimage(key, diffSigningBytes(escrowId, diff)) };
}

export function recoverDiffSigner(
  escrowId: string,
  diff: SignedDiff,
  recover: RecoverFn = defaultRecover,
): string | null {
  return recoverPreimageSigner(diffSigningBytes(escrowId, diff), diff.userSig, recover);
}
