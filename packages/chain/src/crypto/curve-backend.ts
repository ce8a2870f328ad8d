// The two implementations of the secp256k1 operations the gateway needs. @noble/secp256k1 is the
// portable reference; libsecp256k1 through the `secp256k1` package's prebuilt binding is ~50×
// faster at recovery (~55 µs vs ~2.7 ms), which matters because every devshard request recovers
// several signatures on the gateway and on each host. Both produce byte-identical signatures
// (RFC 6979, low-S) and recover the same keys; curve-backend.test.ts checks that on every run.
import { createRequire } from 'node:module';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import * as secp from '@noble/secp256k1';

secp.hashes.sha256 = sha256;
secp.hashes.hmacSha256 = (key, msg) => hmac(sha256, key, msg);

export interface CurveBackend {
  readonly name: 'native' | 'noble';
  /** RFC 6979, low-S: 64-byte r‖s and the recovery id. */
  sign(digest: Uint8Array, key: Uint8Array): { signature: Uint8Array; recid: number };
  /** Compressed public key; throws when the signature does not recover. */
  recover(digest: Uint8Array, signature64: Uint8Array, recid: number): Uint8Array;
  /** Rejects high-S, like the Cosmos SDK verifier. */
  verify(signature64: Uint8Array, digest: Uint8Array, publicKey: Uint8Array): boolean;
}

export const nobleBackend: CurveBackend = {
  name: 'noble',
  sign(digest, key) {
    const r = secp.sign(digest, key, { prehash: false, lowS: true, format: 'recovered' });
    return { signature: r.subarray(1, 65), recid: r[0]! };
  },
  recover(digest, signature64, recid) {
    const recovered = new Uint8Array(65);
    recovered[0] = recid;
    recovered.set(signature64, 1);
    return secp.recoverPublicKey(recovered, digest, { prehash: false });
  },
  verify(signature64, digest, publicKey) {
    try {
      return secp.verify(signature64, digest, publicKey, { prehash: false, lowS: true });
    } catch {
      return false;
    }
  },
};

interface NativeSecp256k1 {
  ecdsaSign(msg32: Uint8Array, key: Uint8Array): { signature: Uint8Array; recid: number };
  ecdsaRecover(sig: Uint8Array, recid: number, msg32: Uint8Array, compressed: boolean): Uint8Array;
  ecdsaVerify(sig: Uint8Array, msg32: Uint8Array, publicKey: Uint8Array): boolean;
}

/** The native backend, or null where its prebuilt binary cannot load (other platform, no binary). */
export function loadNativeBackend(): CurveBackend | null {
  let lib: NativeSecp256k1;
  try {
    // `secp256k1/bindings` is the addon only: the package's root would silently fall back to JS.
    lib = createRequire(import.meta.url)('secp256k1/bindings') as NativeSecp256k1;
  } catch {
    return null;
  }
  return {
    name: 'native',
    sign: (digest, key) => lib.ecdsaSign(digest, key),
    recover: (digest, signature64, recid) => lib.ecdsaRecover(signature64, recid, digest, true),
    verify(signature64, digest, publicKey) {
      try {
        return lib.ecdsaVerify(signature64, digest, publicKey);
      } catch {
        return false;
      }
    },
  };
}

/**
 * The backend this process uses: native when it loads, unless GATEWAY_SECP256K1_BACKEND=noble
 * forces the pure-JS reference. Chosen once: the choice never changes results, only speed.
 */
export function selectBackend(env: Readonly<Record<string, string | undefined>> = process.env): CurveBackend {
  if (env.GATEWAY_SECP256K1_BACKEND === 'noble') return nobleBackend;
  return loadNativeBackend() ?? nobleBackend;
}
