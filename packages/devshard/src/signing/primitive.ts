// The devshard signing primitive (devshard-protocol.md §2.2): Sign(x) = ECDSA over sha256(x) as
// 65-byte R‖S‖V; verification always recovers the signer's address and compares it.
import { type PrivateKey, recoverAddress, sha256 } from '@gonka-gateway/chain';

/** Recovers the `gonka1…` signer of a 32-byte digest, or null; injectable (cache, native backend). */
export type RecoverFn = (digest: Uint8Array, signature65: Uint8Array) => string | null;

export const defaultRecover: RecoverFn = recoverAddress;

export function signPreimage(key: PrivateKey, preimage: Uint8Array): Uint8Array {
  return key.signDigest65(sha256(preimage));
}

/** Null unless `signature` is 65 bytes and recovers (the reference rejects other lengths). */
export function recoverPreimageSigner(
  preimage: Uint8Array,
  signature: Uint8Array,
  recover: RecoverFn = defaultRecover,
): string | null {
  if (signature.length !== 65) return null;
  return recover(sha256(preimage), signature);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * A RecoverFn that remembers its answers (bounded, oldest evicted first). Recovery is a pure
 * function, so replicas in one process (gateway composer, devnet hosts) may share one instance.
 * Keyed by the signature's bytes (a 65-character latin1 string: no hex of both inputs per call) with
 * the digest kept beside the answer; a hit needs both byte-equal, so no answer changes.
 */
export function memoizeRecover(recover: RecoverFn = defaultRecover, maxEntries = 50_000): RecoverFn {
  const cache = new Map<string, { readonly digest: Uint8Array; readonly signer: string | null }>();
  return (digest, signature) => {
    // A view, not a copy (Buffer.from(Uint8Array) would copy the array on every call).
    const key = Buffer.from(signature.buffer, signature.byteOffset, signature.byteLength).toString('latin1');
    const hit = cache.get(key);
    if (hit !== undefined && sameBytes(hit.digest, digest)) return hit.signer;
    const signer = recover(digest, signature);
    if (hit === undefined && cache.size >= maxEntries) cache.delete(cache.keys().next().value as string);
    // The same signature over another digest (a forgery attempt or a mistake) replaces the entry.
    cache.set(key, { digest: digest.slice(), signer });
    return signer;
  };
}
