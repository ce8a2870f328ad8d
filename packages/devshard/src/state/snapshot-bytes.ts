// Byte writer and reader for replica snapshots (snapshot.ts): unsigned LEB128 varints for lengths and
// non-negative integers, zigzag varints for the int64 clock fields, length-prefixed UTF-8 strings and
// byte strings. Every read is bounds-checked, so a truncated or corrupt snapshot throws instead of
// producing a partial state.
import { DevshardError, DevshardErrorCode } from '../errors.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export class SnapshotWriter {
  #buf = new Uint8Array(4096);
  #at = 0;

  #room(n: number): void {
    if (this.#at + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#at + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.#buf.subarray(0, this.#at));
    this.#buf = next;
  }

  byte(v: number): void {
    this.#room(1);
    this.#buf[this.#at++] = v;
  }

  /** A non-negative safe integer. */
  uint(v: number): void {
    if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`not a non-negative integer: ${v}`);
    this.#room(10);
    let n = v;
    while (n >= 0x80) {
      this.#buf[this.#at++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.#buf[this.#at++] = n;
  }

  /** A non-negative bigint of any size (uint64 amounts, 128-bit bitmaps). */
  big(v: bigint): void {
    if (v < 0n) throw new RangeError('negative value in an unsigned field');
    if (v <= 0xffff_ffffn) {
      this.uint(Number(v));
      return;
    }
    this.#room(20);
    let n = v;
    while (n >= 0x80n) {
      this.#buf[this.#at++] = Number(n & 0x7fn) | 0x80;
      n >>= 7n;
    }
    this.#buf[this.#at++] = Number(n);
  }

  /** A signed int64 (zigzag). */
  int(v: bigint): void {
    this.big(v >= 0n ? v << 1n : (-v << 1n) - 1n);
  }

  /**
   * big() of a value kept as a number while it is a safe integer (state/record-entry.ts StoredInt):
   * the same bytes (both are unsigned LEB128) without a bigint.
   */
  storedBig(v: number | bigint): void {
    if (typeof v === 'bigint') this.big(v);
    else if (v < 0) throw new RangeError('negative value in an unsigned field');
    else this.uint(v);
  }

  /** int() of a StoredInt: the same zigzag bytes, without a bigint while 2|v| stays exact. */
  storedInt(v: number | bigint): void {
    if (typeof v === 'number' && v < 2 ** 52 && v > -(2 ** 52)) this.uint(v >= 0 ? v * 2 : -v * 2 - 1);
    else this.int(BigInt(v));
  }

  /** bytes() of the one-byte string s[from, to) (char i = byte i). */
  latin1Bytes(s: string, from: number, to: number): void {
    const length = to - from;
    this.uint(length);
    this.#room(length);
    const buf = this.#buf;
    let at = this.#at;
    for (let i = from; i < to; i++) buf[at++] = s.charCodeAt(i);
    this.#at = at;
  }

  bytes(v: Uint8Array): void {
    this.uint(v.length);
    this.#room(v.length);
    this.#buf.set(v, this.#at);
    this.#at += v.length;
  }

  /** Fixed-length bytes (no length prefix). */
  raw(v: Uint8Array): void {
    this.#room(v.length);
    this.#buf.set(v, this.#at);
    this.#at += v.length;
  }

  string(v: string): void {
    this.bytes(encoder.encode(v));
  }

  finish(): Uint8Array {
    return this.#buf.slice(0, this.#at);
  }
}

function corrupt(detail: string): never {
  throw new DevshardError(DevshardErrorCode.Malformed, `snapshot: ${detail}`);
}

export class SnapshotReader {
  #at = 0;

  constructor(readonly buf: Uint8Array) {}

  get done(): boolean {
    return this.#at === this.buf.length;
  }

  byte(): number {
    if (this.#at >= this.buf.length) corrupt('truncated');
    return this.buf[this.#at++]!;
  }

  uint(): number {
    const v = this.big();
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) corrupt('integer too large');
    return Number(v);
  }

  big(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = this.byte();
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
      if (shift > 140n) corrupt('varint too long');
    }
  }

  int(): bigint {
    const z = this.big();
    return (z & 1n) === 0n ? z >> 1n : -((z + 1n) >> 1n);
  }

  raw(length: number): Uint8Array {
    if (this.#at + length > this.buf.length) corrupt('truncated');
    const out = this.buf.slice(this.#at, this.#at + length);
    this.#at += length;
    return out;
  }

  bytes(): Uint8Array {
    return this.raw(this.uint());
  }

  string(): string {
    try {
      return decoder.decode(this.bytes());
    } catch (error) {
      if (error instanceof DevshardError) throw error;
      return corrupt('invalid UTF-8');
    }
  }
}
