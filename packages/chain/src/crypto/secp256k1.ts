// The one place the gateway, the devnet and the devshard protocol sign and verify through. The
// backend (native libsecp256k1 or noble, see curve-backend.ts) is chosen once per process.
import * as crypto from 'node:crypto';
import * as secp from '@noble/secp256k1';
import { type CurveBackend, selectBackend } from './curve-backend.js';

// crypto.hash (Node ≥ 20.12) is OpenSSL's one-shot digest: ~0.6 µs for a 200-byte preimage and
// ~5 µs for 10 KB, against ~1.7 µs and ~45 µs for @noble/hashes' JS (SHA-NI on x86). Same bytes.
const oneShot = (crypto as { hash?: (alg: string, data: Uint8Array, enc: 'buffer') => Buffer }).hash;

/** SHA-256 of `data` as a fresh 32-byte array. */
export function sha256(data: Uint8Array): Uint8Array {
  if (!(data instanceof Uint8Array)) throw new TypeError('sha256 input must be a Uint8Array');
  const digest = oneShot
    ? oneShot('sha256', data, 'buffer')
    : crypto.createHash('sha256').update(data).digest();
  // A digest Buffer owns its own 32-byte ArrayBuffer (never the shared pool): a plain view of it.
  return new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength);
}

export const SECP256K1_ORDER = secp.Point.CURVE().n;

const backend: CurveBackend = selectBackend();

/** Which implementation signs and recovers in this process (for logs and benchmarks). */
export const secp256k1BackendName = backend.name;

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
  return Uint8Array.from(backend.sign(digest, key).signature);
}

/** RFC 6979, low-S, 65 bytes R‖S‖V with V ∈ {0,1} (devshard-protocol.md §2.1). */
export function signDigest65(digest: Uint8Array, key: Uint8Array): Uint8Array {
  assertLength(digest, 32, 'digest');
  const { signature, recid } = backend.sign(digest, key);
  const out = new Uint8Array(65);
  out.set(signature, 0);
  out[64] = recid;
  return out;
}

/** Recovers the compressed public key from a 65-byte R‖S‖V signature; throws on a malformed one. */
export function recoverPublicKey(digest: Uint8Array, signature65: Uint8Array): Uint8Array {
  assertLength(digest, 32, 'digest');
  assertLength(signature65, 65, 'signature');
  const v = signature65[64]!;
  if (v > 1) throw new TypeError('signature recovery byte must be 0 or 1');
  return Uint8Array.from(backend.recover(digest, signature65.subarray(0, 64), v));
}

/** Verifies a 64-byte r‖s signature; high-S is rejected, like the Cosmos SDK verifier. */
export function verifyDigest64(signature64: Uint8Array, digest: Uint8Array, publicKey: Uint8Array): boolean {
  if (signature64.length !== 64 || digest.length !== 32) return false;
  return backend.verify(signature64, digest, publicKey);
}

export function randomPrivateKey(): Uint8Array {
  return secp.utils.randomSecretKey();
}
