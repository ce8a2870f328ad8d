// State signature (devshard-protocol.md §2.4): a host signs StateSignatureContent{state_root,
// escrow_id, nonce}; the receipt event, GET signatures and the settlement payload carry it. The
// preimage encoder lives in hash/root-formula.ts, shared with the devnet chain's settle check.
import type { PrivateKey } from '@gonka-gateway/chain';
import { encodeStateSignatureContent } from '../hash/root-formula.js';
import { defaultRecover, type RecoverFn, recoverPreimageSigner, signPreimage } from './primitive.js';

export function signStateRoot(
  key: PrivateKey,
  stateRoot: Uint8Array,
  escrowId: string,
  nonce: bigint,
): Uint8Array {
  return signPreimage(key, encodeStateSignatureContent(stateRoot, escrowId, nonce));
}

export function recoverStateSigner(
  stateRoot: Uint8Array,
  escrowId: string,
  nonce: bigint,
  signature: Uint8Array,
  recover: RecoverFn = defaultRecover,
): string | null {
  return recoverPreimageSigner(encodeStateSignatureContent(stateRoot, escrowId, nonce), signature, recover);
}
