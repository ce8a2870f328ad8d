// A live record's InferenceRecordProto entry (devshard-protocol.md §3.3) held as a one-byte string
// (char i = byte i, "latin1"): written field by field straight into a scratch buffer, and read back
// field by field for the fields a record does not keep beside it (state/record.ts).
//
// The bytes are exactly encodeInferenceRecord's (proto/inference-record.ts, the codec's schema
// walk): fields in ascending number, zero values omitted (proto3), validated_by always 16 bytes,
// int64/uint64 as two's-complement varints, model as ProtoWriter writes strings. `record.test.ts`
// checks that equality over random records. Writing directly skips the schema walk, the DataView
// of bitmapBytes and the exact-size copy, which a record pays on every change.
import { ProtoWriter } from '@gonka-gateway/chain';
import { CONFIRMED_AT_HEIGHT_FIELD, STARTED_AT_HEIGHT_FIELD } from '../proto/inference-record.js';
import type { InferenceRecordFields } from './types.js';

/** A 64-bit field as stored: a number when it is a safe integer, else the bigint (never rounded). */
export type StoredInt = number | bigint;

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** The stored form of `v`: one form per value, so two stored values are equal iff `===`. */
export function storedInt(v: bigint): StoredInt {
  return v <= MAX_SAFE && v >= -MAX_SAFE ? Number(v) : v;
}

export function bigOf(v: StoredInt): bigint {
  return typeof v === 'number' ? BigInt(v) : v;
}

export const PROMPT_HASH_FIELD = 5;
export const RESPONSE_HASH_FIELD = 6;
export const VALIDATED_BY_FIELD = 17;
const MODEL_FIELD = 4;
/** model, prompt_hash, response_hash, validated_by; every other field is a varint. */
const LENGTH_DELIMITED: ReadonlySet<number> = new Set([
  MODEL_FIELD,
  PROMPT_HASH_FIELD,
  RESPONSE_HASH_FIELD,
  VALIDATED_BY_FIELD,
]);

const U32_LIMIT = 2 ** 32;
const U64_LIMIT = 1n << 64n;
const I64_MIN = -(1n << 63n);
const U32_MASK = 0xffff_ffffn;
const BITMAP_LIMIT = 1n << 128n;

/** The model field (`22 ‖ len ‖ utf8`) as ProtoWriter writes it, as a one-byte string. */
export function modelFieldText(model: string): string {
  const bytes = new ProtoWriter().string(MODEL_FIELD, model).finish();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
}

/** Reused output buffer: the entry leaves it as a string, so nothing keeps a view into it. */
let out = Buffer.alloc(512);
let len = 0;

function ensure(extra: number): void {
  if (len + extra <= out.length) return;
  const grown = Buffer.alloc(Math.max(out.length * 2, len + extra));
  out.copy(grown, 0, 0, len);
  out = grown;
}

function varint32(value: number): void {
  let v = value >>> 0;
  while (v > 127) {
    out[len++] = (v & 127) | 128;
    v >>>= 7;
  }
  out[len++] = v;
}

/** Field numbers below 32 have a one-byte tag; 18 and 19 take two. */
function tag(field: number, wire: number): void {
  varint32((field << 3) | wire);
}

/** A varint field of a 64-bit kind; `min` is 0 for a field read back from the entry (read as uint64). */
function int64Field(field: number, value: bigint, min: bigint, name: string): void {
  if (value === 0n) return;
  if (value < min || value >= U64_LIMIT) {
    throw new RangeError(
      `record ${name} ${value} is outside the ${min === 0n ? 'uint64' : 'int64 and uint64'} range`,
    );
  }
  tag(field, 0);
  let v = value < 0n ? value + U64_LIMIT : value;
  if (v <= U32_MASK) {
    varint32(Number(v));
    return;
  }
  while (v > 127n) {
    out[len++] = Number(v & 127n) | 128;
    v >>= 7n;
  }
  out[len++] = Number(v);
}

function uint32Field(field: number, value: number): void {
  if (value === 0) return;
  tag(field, 0);
  varint32(value);
}

/** A uint32 read back from the entry must read back as given (no fraction, no wrap). */
function exactUint32Field(field: number, value: number, name: string): void {
  if (!Number.isInteger(value) || value < 0 || value >= U32_LIMIT) {
    throw new RangeError(`record ${name} ${value} is not a uint32`);
  }
  uint32Field(field, value);
}

function bytesField(field: number, value: Uint8Array): void {
  if (value.length === 0) return;
  tag(field, 2);
  varint32(value.length);
  out.set(value, len);
  len += value.length;
}

/** validated_by: always 16 bytes, word 0 (slots 0–63) then word 1, each little-endian. */
function bitmapField(mask: bigint): void {
  if (mask < 0n || mask >= BITMAP_LIMIT) {
    throw new RangeError(`record validated_by ${mask} is not a 128-bit slot bitmap`);
  }
  tag(VALIDATED_BY_FIELD, 2);
  out[len++] = 16;
  let m = mask;
  for (let i = 0; i < 4; i++) {
    const word = m === 0n ? 0 : Number(m & U32_MASK);
    out.writeUInt32LE(word, len);
    len += 4;
    if (m !== 0n) m >>= 32n;
  }
}

/**
 * The entry of `f` as a one-byte string; `modelField` is modelFieldText(f.model). Values a field
 * read back from the entry could not return as given (a negative uint64, a fractional count) throw
 * a RangeError, as the encoder does for values outside both 64-bit ranges: no tx produces them, and
 * a Go peer could not hold them either.
 */
export function entryTextOf(f: InferenceRecordFields, modelField: string): string {
  len = 0;
  ensure(192 + modelField.length + f.promptHash.length + f.responseHash.length);
  int64Field(1, f.id, I64_MIN, 'id');
  uint32Field(2, f.status);
  uint32Field(3, f.executorSlot);
  len += out.write(modelField, len, 'latin1');
  bytesField(PROMPT_HASH_FIELD, f.promptHash);
  bytesField(RESPONSE_HASH_FIELD, f.responseHash);
  int64Field(7, f.inputLength, 0n, 'input_length');
  int64Field(8, f.maxTokens, 0n, 'max_tokens');
  int64Field(9, f.inputTokens, 0n, 'input_tokens');
  int64Field(10, f.outputTokens, 0n, 'output_tokens');
  int64Field(11, f.reservedCost, 0n, 'reserved_cost');
  int64Field(12, f.actualCost, 0n, 'actual_cost');
  int64Field(13, f.startedAt, I64_MIN, 'started_at');
  int64Field(14, f.confirmedAt, I64_MIN, 'confirmed_at');
  exactUint32Field(15, f.votesValid, 'votes_valid');
  exactUint32Field(16, f.votesInvalid, 'votes_invalid');
  bitmapField(f.validatedBy);
  int64Field(STARTED_AT_HEIGHT_FIELD, f.startedAtHeight, 0n, 'started_at_height');
  int64Field(CONFIRMED_AT_HEIGHT_FIELD, f.confirmedAtHeight, 0n, 'confirmed_at_height');
  return out.toString('latin1', 0, len);
}

/** The bytes of a one-byte string (char i = byte i), in an array of their own. */
export function latin1Bytes(s: string, from = 0, to = s.length): Uint8Array {
  const bytes = new Uint8Array(to - from);
  for (let i = from; i < to; i++) bytes[i - from] = s.charCodeAt(i);
  return bytes;
}

const EMPTY_BYTES = new Uint8Array(0);

/**
 * Reads fields back from an entry text. `at` is the read position; a reader is used synchronously,
 * either for one field (`number`, `bytes`, `bitmap`: each seeks from the start) or for a pass
 * (`next`, then the value at `at`).
 */
export class EntryReader {
  at = 0;
  constructor(readonly entry: string) {}

  /** A varint as its stored form: a number up to 2^53 − 1, else the exact bigint. */
  varint(): StoredInt {
    const entry = this.entry;
    let v = 0;
    let scale = 1;
    // Seven bytes carry 49 bits: exact in a number.
    for (let i = 0; i < 7; i++) {
      const b = entry.charCodeAt(this.at++);
      v += (b & 0x7f) * scale;
      if (b < 0x80) return v;
      scale *= 128;
    }
    let big = BigInt(v);
    let shift = 49n;
    for (;;) {
      const b = entry.charCodeAt(this.at++);
      big |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return storedInt(big);
      shift += 7n;
    }
  }

  /** Field number of the next field (its value then starts at `at`), or -1 at the end. */
  next(): number {
    if (this.at >= this.entry.length) return -1;
    const key = Number(this.varint());
    const wire = key & 7;
    if (wire !== 0 && wire !== 2) throw new RangeError(`InferenceRecordProto: unexpected wire type ${wire}`);
    return Math.floor(key / 8);
  }

  /** Past the value of field `no` (varint or length-delimited, as the schema says). */
  skip(no: number): void {
    if (!LENGTH_DELIMITED.has(no)) {
      this.varint();
      return;
    }
    const length = Number(this.varint()); // read before `at` is: `at += varint()` would add to the old `at`
    this.at += length;
  }

  /**
   * At the value of field `no`: true, or false when the entry has no such field (its value is
   * zero or empty). Starts from the beginning.
   */
  seek(no: number): boolean {
    this.at = 0;
    for (let field = this.next(); field !== -1 && field <= no; field = this.next()) {
      if (field === no) return true;
      this.skip(field);
    }
    return false;
  }

  /** The length-delimited value at `at`, in an array of its own. */
  bytesHere(): Uint8Array {
    const length = Number(this.varint());
    const from = this.at;
    this.at += length;
    return latin1Bytes(this.entry, from, this.at);
  }

  /** A varint field (uint64, uint32) as its stored form; 0 when absent. */
  number(no: number): StoredInt {
    return this.seek(no) ? this.varint() : 0;
  }

  /** A length-delimited field in an array of its own; empty when absent. */
  bytes(no: number): Uint8Array {
    return this.seek(no) ? this.bytesHere() : EMPTY_BYTES;
  }
}
