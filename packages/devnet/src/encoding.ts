// Small encoders shared by the devnet's JSON views: RFC 3339 times with nanoseconds (CometBFT and
// Cosmos REST print block times that way), strict base64, and hex.
import { bytesToHex } from '@noble/hashes/utils.js';
import { base64 } from '@scure/base';

const NS_PER_MS = 1_000_000n;

/** `2025-01-01T00:00:00.123456789Z`, the form CometBFT uses for block times. */
export function rfc3339Nano(ns: bigint): string {
  const ms = ns / NS_PER_MS;
  const iso = new Date(Number(ms)).toISOString(); // 2025-01-01T00:00:00.123Z
  const nanos = (ns % 1_000_000_000n).toString().padStart(9, '0');
  return `${iso.slice(0, 19)}.${nanos}Z`;
}

export const nowNs = (): bigint => BigInt(Date.now()) * NS_PER_MS;

export const toBase64 = (bytes: Uint8Array): string => base64.encode(bytes);

/** Strict padded base64; null when the text is not base64. */
export function fromBase64(text: string): Uint8Array | null {
  try {
    return base64.decode(text);
  } catch {
    return null;
  }
}

export const hexUpper = (bytes: Uint8Array): string => bytesToHex(bytes).toUpperCase();
export { bytesToHex };

/** A canonical non-negative decimal integer (no sign, no leading zeros) as bigint, else null. */
export function parseCanonicalUint(text: string): bigint | null {
  if (!/^(0|[1-9][0-9]*)$/.test(text)) return null;
  return BigInt(text);
}
