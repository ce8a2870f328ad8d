// The SessionRecord as the JSON of session_heads.record. The record nests bigints (amount, fees,
// timeouts) beside plain numbers (validation rate, vote factor), and reopening must rebuild exactly
// the session that was adopted (devshard-protocol.md §10 item 7), so every bigint is written as
// {"$u64": "<decimal>"} and nothing is inferred from the digits on the way back.
import type { SessionRecord } from '@gonka-gateway/devshard/session';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const TAG = '$u64';

function encode(value: unknown): Json {
  if (typeof value === 'bigint') return { [TAG]: value.toString() };
  if (Array.isArray(value)) return value.map(encode);
  if (value !== null && typeof value === 'object') {
    const out: { [key: string]: Json } = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = encode(v);
    return out;
  }
  if (typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean' || value === null)
    return value;
  throw new TypeError(`session record holds an unstorable ${typeof value}`);
}

function decode(value: Json): unknown {
  if (Array.isArray(value)) return value.map(decode);
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === TAG && typeof value[TAG] === 'string') return BigInt(value[TAG]);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = decode(v);
    return out;
  }
  return value;
}

export function recordToJson(record: SessionRecord): Json {
  return encode(record);
}

export function recordFromJson(json: unknown): SessionRecord {
  return decode(json as Json) as SessionRecord;
}
