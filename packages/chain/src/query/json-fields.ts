// Tolerant readers for proto-JSON and node-API responses (chain-and-network.md §3.4): unknown extra
// fields are ignored, a missing field takes its proto3 zero value (proto JSON omits defaults), and a
// field of the wrong type is a ResponseShapeError naming its path. The query layer turns that into
// CHAIN_ERR_BAD_RESPONSE naming the endpoint.
import { base64 } from '@scure/base';
import { parseInteger } from '../encoding/integer.js';

export type JsonObject = Record<string, unknown>;

export class ResponseShapeError extends Error {
  override readonly name = 'ResponseShapeError';
  constructor(
    readonly field: string,
    expected: string,
  ) {
    super(`${field}: expected ${expected}`);
  }
}

const join = (path: string, key: string) => (path === '' ? key : `${path}.${key}`);
const absent = (v: unknown) => v === undefined || v === null;

export function asObject(value: unknown, path: string): JsonObject {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ResponseShapeError(path || '(body)', 'an object');
  }
  return value as JsonObject;
}

/** A nested object; missing or null → undefined. */
export function optObject(parent: JsonObject, key: string, path: string): JsonObject | undefined {
  const v = parent[key];
  return absent(v) ? undefined : asObject(v, join(path, key));
}

/** A nested object that must be present. */
export function reqObject(parent: JsonObject, key: string, path: string): JsonObject {
  const v = parent[key];
  if (absent(v)) throw new ResponseShapeError(join(path, key), 'an object');
  return asObject(v, join(path, key));
}

export function str(parent: JsonObject, key: string, path: string, fallback = ''): string {
  const v = parent[key];
  if (absent(v)) return fallback;
  if (typeof v !== 'string') throw new ResponseShapeError(join(path, key), 'a string');
  return v;
}

export function reqStr(parent: JsonObject, key: string, path: string): string {
  const v = parent[key];
  if (typeof v !== 'string' || v === '') throw new ResponseShapeError(join(path, key), 'a non-empty string');
  return v;
}

export function int(parent: JsonObject, key: string, path: string, fallback = 0n): bigint {
  const v = parent[key];
  if (absent(v)) return fallback;
  try {
    return parseInteger(v);
  } catch {
    throw new ResponseShapeError(join(path, key), 'an integer (number or decimal string)');
  }
}

export function reqInt(parent: JsonObject, key: string, path: string): bigint {
  if (absent(parent[key])) throw new ResponseShapeError(join(path, key), 'an integer');
  return int(parent, key, path);
}

/** uint32/int32 fields stay numbers; they are counts and ratios, never amounts. */
export function u32(parent: JsonObject, key: string, path: string, fallback = 0): number {
  const n = int(parent, key, path, BigInt(fallback));
  if (n < 0n || n > 0xffffffffn) throw new ResponseShapeError(join(path, key), 'a 32-bit unsigned integer');
  return Number(n);
}

export function bool(parent: JsonObject, key: string, path: string, fallback = false): boolean {
  const v = parent[key];
  if (absent(v)) return fallback;
  if (typeof v === 'boolean') return v;
  if (v === 'true' || v === 'false') return v === 'true';
  throw new ResponseShapeError(join(path, key), 'a boolean');
}

export function list(parent: JsonObject, key: string, path: string): unknown[] {
  const v = parent[key];
  if (absent(v)) return [];
  if (!Array.isArray(v)) throw new ResponseShapeError(join(path, key), 'an array');
  return v;
}

export function strList(parent: JsonObject, key: string, path: string): string[] {
  return list(parent, key, path).map((item, i) => {
    if (typeof item !== 'string') throw new ResponseShapeError(`${join(path, key)}[${i}]`, 'a string');
    return item;
  });
}

export function objList(parent: JsonObject, key: string, path: string): Array<[JsonObject, string]> {
  return list(parent, key, path).map((item, i) => {
    const itemPath = `${join(path, key)}[${i}]`;
    return [asObject(item, itemPath), itemPath];
  });
}

/** proto `bytes` arrive base64-encoded; missing or empty → null. */
export function base64Bytes(parent: JsonObject, key: string, path: string): Uint8Array | null {
  const v = str(parent, key, path);
  if (v === '') return null;
  try {
    return base64.decode(v);
  } catch {
    throw new ResponseShapeError(join(path, key), 'base64 bytes');
  }
}
