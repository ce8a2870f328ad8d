// Typed readers for JSON objects from the lossless parser, with Go's decoding rules for the wire
// types of devshard-protocol.md §4.3: uint64/int64 must be integer literals in range, []byte is
// standard base64 (null = empty), absent fields are zero values.
import { decodeBase64 } from './base64.js';
import type { JsonObject, JsonValue } from './lossless.js';

const U64_MAX = 0xffff_ffff_ffff_ffffn;
const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;

export function asObject(value: JsonValue | undefined, what: string): JsonObject {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new SyntaxError(`${what}: expected an object`);
  }
  return value as JsonObject;
}

export function optU64(o: JsonObject, key: string): bigint | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'bigint' || v < 0n || v > U64_MAX) throw new SyntaxError(`${key}: expected a uint64`);
  return v;
}

export function u64(o: JsonObject, key: string): bigint {
  return optU64(o, key) ?? 0n;
}

export function optI64(o: JsonObject, key: string): bigint | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'bigint' || v < I64_MIN || v > I64_MAX) throw new SyntaxError(`${key}: expected an int64`);
  return v;
}

export function u32(o: JsonObject, key: string): number {
  const v = optU64(o, key) ?? 0n;
  if (v > 0xffff_ffffn) throw new SyntaxError(`${key}: expected a uint32`);
  return Number(v);
}

export function optBytes(o: JsonObject, key: string): Uint8Array | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new SyntaxError(`${key}: expected base64`);
  return decodeBase64(v);
}

export function bytes(o: JsonObject, key: string): Uint8Array {
  return optBytes(o, key) ?? new Uint8Array(0);
}

export function str(o: JsonObject, key: string): string {
  const v = o[key];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new SyntaxError(`${key}: expected a string`);
  return v;
}

export function bool(o: JsonObject, key: string): boolean {
  const v = o[key];
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw new SyntaxError(`${key}: expected a boolean`);
  return v;
}

export function list(o: JsonObject, key: string): JsonValue[] {
  const v = o[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new SyntaxError(`${key}: expected an array`);
  return v;
}
