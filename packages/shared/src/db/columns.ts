import { customType } from 'drizzle-orm/pg-core';

/**
 * Unsigned 64-bit integers (amounts in base denom, escrow ids, nonces) as numeric(20,0) ↔ bigint:
 * Postgres bigint is signed and stops at 2^63−1, and money must never pass through a JS number.
 */
export const uint64 = customType<{ data: bigint; driverData: string }>({
  dataType: () => 'numeric(20, 0)',
  toDriver: (value) => {
    if (value < 0n || value > 0xffff_ffff_ffff_ffffn)
      throw new RangeError('uint64 column value out of range');
    return value.toString();
  },
  fromDriver: (value) => BigInt(value),
});

/** bytea ↔ Uint8Array (signatures, roots, raw tx bytes). */
export const bytes = customType<{ data: Uint8Array; driverData: Buffer }>({
  dataType: () => 'bytea',
  toDriver: (value) => Buffer.from(value.buffer, value.byteOffset, value.byteLength),
  fromDriver: (value) => new Uint8Array(value),
});
