// HTTP request header signature (devshard-protocol.md §2.4, §4.1): X-Devshard-Signature is the
// lowercase hex of Sign(sha256(escrow_id_utf8 ‖ body ‖ u64be(unix_seconds))); the ECDSA digest is
// therefore a double SHA-256.
import { type PrivateKey, sha256 } from '@gonka-gateway/chain';
import { u64be, utf8 } from '../hash/bytes.js';
import { sha256Parts } from '../hash/sha256.js';
import { defaultRecover, type RecoverFn } from './primitive.js';

/** The preimage x of Sign(x): itself a SHA-256 digest. */
export function requestSignaturePreimage(
  escrowId: string,
  body: Uint8Array,
  unixSeconds: bigint,
): Uint8Array {
  return sha256Parts(utf8(escrowId), body, u64be(unixSeconds));
}

export function signRequest(
  key: PrivateKey,
  escrowId: string,
  body: Uint8Array,
  unixSeconds: bigint,
): string {
  const sig = key.signDigest65(sha256(requestSignaturePreimage(escrowId, body, unixSeconds)));
  return Buffer.from(sig.buffer, sig.byteOffset, sig.byteLength).toString('hex');
}

/** The signer of a request header, or null (malformed hex, wrong length, no recovery). */
export function recoverRequestSigner(
  escrowId: string,
  body: Uint8Array,
  unixSeconds: bigint,
  signatureHex: string,
  recover: RecoverFn = defaultRecover,
): string | null {
  if (!/^[0-9a-fA-F]{130}$/.test(signatureHex)) return null;
  const sig = new Uint8Array(Buffer.from(signatureHex, 'hex'));
  return recover(sha256(requestSignaturePreimage(escrowId, body, unixSeconds)), sig);
}
