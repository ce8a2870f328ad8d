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

/**
 * A RecoverFn that remembers its answers (bounded, oldest evicted first). Recovery is a pure
 * function, so replicas in one process (gateway composer, devnet hosts) may share one instance.
 */
export function memoizeRecover(recover: RecoverFn = defaultRecover, maxEntries = 50_000): RecoverFn {
  const cache = new Map<string, string | null>();
  return (digest, signature) => {
    // Views, not copies (Buffer.from(Uint8Array) would copy both arrays on every call).
    const key =
      Buffer.from(digest.buffer, digest.byteOffset, digest.byteLength).toString('hex') +
      Buffer.from(signature.buffer, signature.byteOffset, signature.byteLength).toString('hex');
    const hit = cache.get(key);
    if (hit !== undefined) return hit;
    const value = recover(digest, signature);
    if (cache.size >= maxEntries) cache.delete(cache.keys().next().value as string);
    cache.set(key, value);
    return value;
  };
}
