// Diff user signature (devshard-protocol.md §2.4): Sign(DiffContent{nonce, txs, escrow_id,
// post_state_root}) by the escrow creator; hosts accept exactly the creator address (no warm keys).
import type { PrivateKey } from '@gonka-gateway/chain';
import type { EncodedTx } from '../proto/devshard-tx.js';
import { encodeDiffContent } from '../proto/diff-content.js';
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

export function diffSigningBytes(escrowId: string, diff: UnsignedDiff): Uint8Array {
  return encodeDiffContent({
    nonce: diff.nonce,
    txs: diff.txs,
    escrowId,
    postStateRoot: diff.postStateRoot,
  });
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
