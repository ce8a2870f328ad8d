import { addressFromPublicKey } from './address.js';
import { recoverPublicKey } from './secp256k1.js';

/** The `gonka1…` address that signed `digest`, or null when the signature does not recover. */
export function recoverAddress(digest: Uint8Array, signature65: Uint8Array): string | null {
  try {
    return addressFromPublicKey(recoverPublicKey(digest, signature65));
  } catch {
    return null;
  }
}
