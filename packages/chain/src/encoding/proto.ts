// Deterministic protobuf (proto3) writing and field-level reading, the way Go's
// proto.Marshal(Deterministic) does it (devshard-protocol.md §2.3): fields in ascending number,
// default scalars omitted, sub-messages length-delimited. Callers write fields in ascending order.
import { BinaryReader } from 'cosmjs-types/binary';

const VARINT = 0;
const FIXED64 = 1;
const LEN = 2;
const FIXED32 = 5;

/** Scratch buffers of finished writers, reused by the next ones (bounded in count and size). */
const pool: Uint8Array[] = [];
const POOL_MAX = 8;
const POOL_BUFFER_MAX = 64 * 1024;
const U64_LIMIT = 1n << 64n;
const I64_MIN = -(1n << 63n);

/**
 * Writes into one growable buffer taken from a small pool and returns an exact-size copy: no
 * per-field objects and no 8 KB slab pinned by every result (cosmjs-types' BinaryWriter allocates a
 * fresh 8 KB pool per finish() and hands out a view into it). The bytes are the BinaryWriter's
 * (proto.test.ts compares them on random input).
 */
export class ProtoWriter {
  private buf: Uint8Array = pool.pop() ?? new Uint8Array(256);
  private len = 0;
  /** False once finish() handed `buf` out: it must never go back to the pool. */
  private poolable = true;

  private ensure(extra: number): void {
    if (this.len + extra <= this.buf.length) return;
    const grown = new Uint8Array(Math.max(this.buf.length * 2, this.len + extra));
    grown.set(this.buf.subarray(0, this.len));
    this.buf = grown;
    this.poolable = true;
  }

  private varint32(value: number): void {
    let v = value >>> 0;
    this.ensure(5);
    const buf = this.buf;
    while (v > 127) {
      buf[this.len++] = (v & 127) | 128;
      v >>>= 7;
    }
    buf[this.len++] = v;
  }

  /** Two's complement 64-bit varint, as BinaryWriter.int64/uint64 write it. */
  private varint64(value: bigint): void {
    if (value < I64_MIN || value >= U64_LIMIT) {
      // BinaryWriter wrote such values as corrupt varints; no Go peer could decode them either.
      throw new RangeError(`varint ${value} is outside the int64 and uint64 ranges`);
    }
    let v = value < 0n ? value + U64_LIMIT : value;
    this.ensure(10);
    const buf = this.buf;
    if (v <= 0xffff_ffffn) {
      this.varint32(Number(v));
      return;
    }
    while (v > 127n) {
      buf[this.len++] = Number(v & 127n) | 128;
      v >>= 7n;
    }
    buf[this.len++] = Number(v);
  }

  private append(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.len);
    this.len += bytes.length;
  }

  private tag(field: number, wireType: number): void {
    this.varint32((field << 3) | wireType);
  }

  uint64(field: number, value: bigint | number): this {
    const v = BigInt(value);
    if (v !== 0n) {
      this.tag(field, VARINT);
      this.varint64(v);
    }
    return this;
  }

  /** int64 as a varint (two's complement for negatives, as Go does). */
  int64(field: number, value: bigint | number): this {
    return this.uint64(field, value);
  }

  uint32(field: number, value: number): this {
    if (value !== 0) {
      this.tag(field, VARINT);
      this.varint32(value);
    }
    return this;
  }

  bool(field: number, value: boolean): this {
    if (value) {
      this.tag(field, VARINT);
      this.varint32(1);
    }
    return this;
  }

  string(field: number, value: string): this {
    if (value !== '') {
      this.tag(field, LEN);
      const length = utf8Length(value);
      this.varint32(length);
      this.ensure(length);
      this.len = utf8Write(value, this.buf, this.len);
    }
    return this;
  }

  bytes(field: number, value: Uint8Array | undefined): this {
    if (value && value.length > 0) this.message(field, value);
    return this;
  }

  /**
   * A length-delimited field written even when empty: an element of a repeated message, a set
   * oneof member (`finalize_round` encodes as `42 00`) or a present singular sub-message.
   */
  message(field: number, encoded: Uint8Array): this {
    this.tag(field, LEN);
    this.varint32(encoded.length);
    this.append(encoded);
    return this;
  }

  /**
   * Opens a length-delimited field whose content the caller writes next into this writer, closed by
   * endMessage(mark): the same bytes as message(field, separately encoded content) without a writer
   * and a copy per sub-message. One byte is reserved for the length; a longer length moves the
   * content up (copyWithin) once it is known.
   */
  beginMessage(field: number): number {
    this.tag(field, LEN);
    this.ensure(1);
    return this.len++;
  }

  endMessage(mark: number): this {
    const length = this.len - mark - 1;
    if (length < 128) {
      this.buf[mark] = length;
      return this;
    }
    let size = 1;
    for (let v = length >>> 7; v > 0; v >>>= 7) size++;
    this.ensure(size - 1);
    const buf = this.buf;
    buf.copyWithin(mark + size, mark + 1, this.len);
    let at = mark;
    let v = length;
    while (v > 127) {
      buf[at++] = (v & 127) | 128;
      v >>>= 7;
    }
    buf[at] = v;
    this.len += size - 1;
    return this;
  }

  /** Bytes that are already a valid field sequence (unknown fields kept from a peer, §10.1). */
  raw(encodedFields: Uint8Array): this {
    this.append(encodedFields);
    return this;
  }

  finish(): Uint8Array {
    const out = this.buf.slice(0, this.len);
    if (this.poolable && pool.length < POOL_MAX && this.buf.length <= POOL_BUFFER_MAX) pool.push(this.buf);
    // The pooled buffer belongs to the next writer now: any later write here grows a new one.
    this.buf = out;
    this.poolable = false;
    return out;
  }
}

/** UTF-8 length as BinaryWriter computes it (a lone surrogate counts 3 bytes). */
function utf8Length(str: string): number {
  let len = 0;
  for (let i = 0; i < str.length; ++i) {
    const c = str.charCodeAt(i);
    if (c < 128) len += 1;
    else if (c < 2048) len += 2;
    else if ((c & 0xfc00) === 0xd800 && (str.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      ++i;
      len += 4;
    } else len += 3;
  }
  return len;
}

/** BinaryWriter's UTF-8 writer (lone surrogates encoded as themselves, not as U+FFFD); returns the end. */
function utf8Write(str: string, buf: Uint8Array, offset: number): number {
  let at = offset;
  for (let i = 0; i < str.length; ++i) {
    let c1 = str.charCodeAt(i);
    const c2 = str.charCodeAt(i + 1);
    if (c1 < 128) {
      buf[at++] = c1;
    } else if (c1 < 2048) {
      buf[at++] = (c1 >> 6) | 192;
      buf[at++] = (c1 & 63) | 128;
    } else if ((c1 & 0xfc00) === 0xd800 && (c2 & 0xfc00) === 0xdc00) {
      c1 = 0x10000 + ((c1 & 0x03ff) << 10) + (c2 & 0x03ff);
      ++i;
      buf[at++] = (c1 >> 18) | 240;
      buf[at++] = ((c1 >> 12) & 63) | 128;
      buf[at++] = ((c1 >> 6) & 63) | 128;
      buf[at++] = (c1 & 63) | 128;
    } else {
      buf[at++] = (c1 >> 12) | 224;
      buf[at++] = ((c1 >> 6) & 63) | 128;
      buf[at++] = (c1 & 63) | 128;
    }
  }
  return at;
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
