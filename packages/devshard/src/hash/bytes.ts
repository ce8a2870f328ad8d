// Fixed-width big-endian integers for the hash preimages of devshard-protocol.md §6.

export function u64be(value: bigint): Uint8Array {
  if (value < 0n || value > 0xffff_ffff_ffff_ffffn) throw new RangeError('uint64 out of range');
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, value);
  return out;
}

export function u32be(value: number): Uint8Array {
  if (!Number.isInteger(value) || value < 0 || value > 0xffff_ffff)
    throw new RangeError('uint32 out of range');
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, value);
  return out;
}

const encoder = new TextEncoder();

export const utf8 = (text: string): Uint8Array => encoder.encode(text);
