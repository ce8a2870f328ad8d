// The one place that talks to the curve library. Every signature in the gateway, the devnet and the
// devshard protocol goes through these functions, so a faster backend can replace them in one file.
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import * as secp from '@noble/secp256k1';

// noble's synchronous API needs its hash slots filled; assigning the same functions again is harmless.
secp.hashes.sha256 = sha256;
secp.hashes.hmacSha256 = (key, msg) => hmac(sha256, key, msg);

export { sha256 };

export const SECP256K1_ORDER = secp.Point.CURVE().n;

function assertLength(bytes: Uint8Array, length: number, what: string): void {
  if (!(bytes instanceof Uint8Array) || bytes.length !== length) {
    throw new TypeError(`${what} must be ${length} bytes`);
  }
}

export function isValidPrivateKey(key: Uint8Array): boolean {
  return key.length === 32 && secp.utils.isValidSecretKey(key);
}

/** 33-byte compressed public key. */
export function publicKeyFromPrivate(key: Uint8Array): Uint8Array {
  return secp.getPublicKey(key, true);
}

/** RFC 6979, low-S, 64 bytes r‖s over a 32-byte digest the caller computed. */
export function signDigest64(digest: Uint8Array, key: Uint8Array): Uint8Array {
  assertLength(digest, 32, 'digest');
  return secp.sign(digest, key, { prehash: false, lowS: true });
}

/**
 * RFC 6979, low-S, 65 bytes R‖S‖V with V ∈ {0,1} (devshard-protocol.md §2.1). noble puts the
 * recovery byte first; the protocol wants it last.
 */
export function signDigest65(digest: Uint8Array, key: Uint8Array): Uint8Array {
  assertLength(digest, 32, 'digest');
  const recovered = secp.sign(digest, key, { prehash: false, lowS: true, format: 'recovered' });
  const out = new Uint8Array(65);
  out.set(recovered.subarray(1, 65), 0);
  out[64] = recovered[0]!;
  return out;
}

/** Recovers the compressed public key from a 65-byte R‖S‖V signature; throws on a malformed one. */
export function recoverPublicKey(digest: Uint8Array, signature65: Uint8Array): Uint8Array {
  assertLength(digest, 32, 'digest');
  assertLength(signature65, 65, 'signature');
  const v = signature65[64]!;
  if (v > 1) throw new TypeError('signature recovery byte must be 0 or 1');
  const recovered = new Uint8Array(65);
  recovered[0] = v;
  recovered.set(signature65.subarray(0, 64), 1);
  return secp.recoverPublicKey(recovered, digest, { prehash: false });
}

/** Verifies a 64-byte r‖s signature; high-S is rejected, like the Cosmos SDK verifier. */
export function verifyDigest64(signature64: Uint8Array, digest: Uint8Array, publicKey: Uint8Array): boolean {
  if (signature64.length !== 64 || digest.length !== 32) return false;
  try {
    return secp.verify(signature64, digest, publicKey, { prehash: false, lowS: true });
  } catch {
    return false;
  }
}

export function randomPrivateKey(): Uint8Array {
  return secp.utils.randomSecretKey();
}
