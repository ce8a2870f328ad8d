// One integer parser for every number that comes off the wire (chain-and-network.md §3.4): proto JSON
// sends int64/uint64 as decimal strings, CometBFT sends heights as strings, the node API sends Go
// numbers. Everything becomes a bigint; nothing passes through a float.

const DECIMAL = /^-?[0-9]+$/;
const UINT64_MAX = (1n << 64n) - 1n;

/** A number (safe integer only) or a decimal string → bigint. Throws TypeError otherwise. */
export function parseInteger(value: unknown): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') {
    // A JSON number above 2^53 has already lost digits; refuse it rather than guess.
    if (!Number.isSafeInteger(value)) throw new TypeError('expected an integer within the safe range');
    return BigInt(value);
  }
  if (typeof value === 'string' && DECIMAL.test(value)) return BigInt(value);
  throw new TypeError('expected an integer (number or decimal string)');
}

/** parseInteger restricted to 0 ≤ n < 2^64 (proto uint64: escrow ids, amounts, nonces). */
export function parseUint64(value: unknown): bigint {
  const n = parseInteger(value);
  if (n < 0n || n > UINT64_MAX) throw new RangeError('expected an unsigned 64-bit integer');
  return n;
}
