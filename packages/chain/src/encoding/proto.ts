// Deterministic protobuf (proto3) writing and field-level reading, the way Go's
// proto.Marshal(Deterministic) does it (devshard-protocol.md §2.3): fields in ascending number,
// default scalars omitted, sub-messages length-delimited. Callers write fields in ascending order.
import { BinaryReader, BinaryWriter } from 'cosmjs-types/binary';

const VARINT = 0;
const FIXED64 = 1;
const LEN = 2;
const FIXED32 = 5;

export class ProtoWriter {
  private writer = BinaryWriter.create();
  private readonly parts: Uint8Array[] = [];

  uint64(field: number, value: bigint | number): this {
    if (BigInt(value) !== 0n) this.writer.uint32((field << 3) | VARINT).uint64(BigInt(value));
    return this;
  }

  /** int64 as a varint (two's complement for negatives, as Go does). */
  int64(field: number, value: bigint | number): this {
    if (BigInt(value) !== 0n) this.writer.uint32((field << 3) | VARINT).int64(BigInt(value));
    return this;
  }

  uint32(field: number, value: number): this {
    if (value !== 0) this.writer.uint32((field << 3) | VARINT).uint32(value);
    return this;
  }

  bool(field: number, value: boolean): this {
    if (value) this.writer.uint32((field << 3) | VARINT).bool(true);
    return this;
  }

  string(field: number, value: string): this {
    if (value !== '') this.writer.uint32((field << 3) | LEN).string(value);
    return this;
  }

  bytes(field: number, value: Uint8Array | undefined): this {
    if (value && value.length > 0) this.writer.uint32((field << 3) | LEN).bytes(value);
    return this;
  }

  /**
   * A length-delimited field written even when empty: an element of a repeated message, a set
   * oneof member (`finalize_round` encodes as `42 00`) or a present singular sub-message.
   */
  message(field: number, encoded: Uint8Array): this {
    this.writer.uint32((field << 3) | LEN).bytes(encoded);
    return this;
  }

  /** Bytes that are already a valid field sequence (unknown fields kept from a peer, §10.1). */
  raw(encodedFields: Uint8Array): this {
    this.parts.push(this.writer.finish(), encodedFields);
    this.writer = BinaryWriter.create();
    return this;
  }

  finish(): Uint8Array {
    const tail = this.writer.finish();
    return this.parts.length === 0 ? tail : concat([...this.parts, tail]);
  }
}

export function concat(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const p of parts) length += p.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

export type ProtoField =
  | { field: number; wireType: 0; varint: bigint; start: number; end: number }
  | { field: number; wireType: 2; bytes: Uint8Array; start: number; end: number }
  | { field: number; wireType: 1 | 5; start: number; end: number };

/**
 * Splits an encoded message into its fields, each with its raw span, so a caller can read known
 * fields and keep unknown ones byte for byte. Throws on truncated or malformed input.
 */
export function readFields(bytes: Uint8Array): ProtoField[] {
  const reader = new BinaryReader(bytes);
  const fields: ProtoField[] = [];
  while (reader.pos < reader.len) {
    const start = reader.pos;
    const tag = reader.uint32();
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === 0) throw new RangeError('protobuf field number 0');
    if (wireType === VARINT) {
      const varint = reader.uint64();
      fields.push({ field, wireType, varint, start, end: reader.pos });
    } else if (wireType === LEN) {
      const value = reader.bytes();
      fields.push({ field, wireType, bytes: value, start, end: reader.pos });
    } else if (wireType === FIXED64 || wireType === FIXED32) {
      reader.skipType(wireType);
      fields.push({ field, wireType, start, end: reader.pos });
    } else {
      throw new RangeError(`unsupported protobuf wire type ${wireType}`);
    }
    if (reader.pos > reader.len) throw new RangeError('truncated protobuf message');
  }
  return fields;
}
