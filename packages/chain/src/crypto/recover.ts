import { addressFromPublicKey } from './address.js';
import { recoverPublicKey } from './secp256k1.js';

/**
 * Addresses of recently recovered public keys. A session's signers are few (its hosts and their
 * warm keys, the creator) and each recovery would otherwise hash and bech32-encode the key again
 * (~30 µs in JS); the mapping is a pure function, so caching it cannot change an answer.
 */
const addressOfKey = new Map<string, string>();
const ADDRESS_CACHE_MAX = 4_096;

function cachedAddress(publicKey: Uint8Array): string {
  const key = Buffer.from(publicKey.buffer, publicKey.byteOffset, publicKey.byteLength).toString('latin1');
  let address = addressOfKey.get(key);
  if (address === undefined) {
    address = addressFromPublicKey(publicKey);
    if (addressOfKey.size >= ADDRESS_CACHE_MAX)
      addressOfKey.delete(addressOfKey.keys().next().value as string);
    addressOfKey.set(key, address);
  }
  return address;
}

/** The `gonka1…` address that signed `digest`, or null when the signature does not recover. */
export function recoverAddress(digest: Uint8Array, signature65: Uint8Array): string | null {
  try {
    return cachedAddress(recoverPublicKey(digest, signature65));
  } catch {
    return null;
  }
}
