import { ripemd160 } from '@noble/hashes/legacy.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bech32 } from '@scure/base';

export const ADDRESS_PREFIX = 'gonka';

/** bech32(prefix, ripemd160(sha256(compressed pubkey))), chain-and-network.md §1. */
export function addressFromPublicKey(publicKey: Uint8Array, prefix = ADDRESS_PREFIX): string {
  if (publicKey.length !== 33) throw new TypeError('public key must be 33 bytes (compressed)');
  return bech32.encode(prefix, bech32.toWords(ripemd160(sha256(publicKey))));
}

/** The 20 address bytes, or an error naming what is wrong (never the input itself when it may be secret). */
export function decodeAddress(address: string, prefix = ADDRESS_PREFIX): Uint8Array {
  const { prefix: actual, words } = bech32.decode(address as `${string}1${string}`);
  if (actual !== prefix) throw new TypeError(`address prefix must be ${prefix}, got ${actual}`);
  const bytes = bech32.fromWords(words);
  if (bytes.length !== 20) throw new TypeError('address must hold 20 bytes');
  return bytes;
}

export function isAddress(value: unknown, prefix = ADDRESS_PREFIX): value is string {
  if (typeof value !== 'string') return false;
  try {
    decodeAddress(value, prefix);
    return true;
  } catch {
    return false;
  }
}
