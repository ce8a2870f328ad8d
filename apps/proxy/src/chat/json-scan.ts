// The parse stage's checks on the raw body bytes, before JSON.parse (apps/proxy README "Request
// policy"). The host runs the client's exact bytes (spec §2.7; devshard-protocol.md §2.5 hashes
// them), so the gateway must see the same request the host will: bytes that are not UTF-8 would be
// read with U+FFFD here and refused there, and a key given twice is read as its last value here
// (JSON.parse) but as its first by some parsers. Both are refused, as is nesting deeper than any
// real request needs (every later step that walks the body is bounded by it).
import { isUtf8 } from 'node:buffer';
import { GatewayError } from '@gonka-gateway/shared';

/** Deepest nesting of objects and arrays in a request body. */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

interface Level {
  /** Keys seen in this object; undefined for an array. */
  readonly keys: Set<string> | undefined;
  /** The key whose value is being read (objects) or the next index (arrays). */
  at: string | number;
  expectKey: boolean;
}

/** Throws a 400 for bytes that are not UTF-8, nesting over MAX_JSON_DEPTH, or a duplicate key. */
export function scanJsonBody(raw: Buffer): void {
  if (!isUtf8(raw)) throw new GatewayError('invalid_json', 'request body is not valid UTF-8');
  const stack: Level[] = [];
  const n = raw.length;
  for (let i = 0; i < n; i++) {
    const c = raw[i];
    if (c === QUOTE) {
      const end = stringEnd(raw, i);
      const top = stack.at(-1);
      if (top?.keys && top.expectKey) {
        const key = keyText(raw, i, end);
        if (top.keys.has(key)) {
          throw new GatewayError('invalid_request', `the key "${clip(key)}" appears twice in an object`, {
            param: pathOf(stack, key),
          });
        }
        top.keys.add(key);
        top.at = key;
      }
      i = end;
    } else if (c === 0x7b || c === 0x5b) {
      if (stack.length >= MAX_JSON_DEPTH) {
        throw new GatewayError(
          'invalid_request',
          `the request body nests deeper than ${MAX_JSON_DEPTH} levels`,
          { param: pathOf(stack, undefined) },
        );
      }
      stack.push(
        c === 0x7b
          ? { keys: new Set(), at: '', expectKey: true }
          : { keys: undefined, at: 0, expectKey: false },
      );
    } else if (c === 0x7d || c === 0x5d) {
      stack.pop();
    } else if (c === 0x3a) {
      const top = stack.at(-1);
      if (top) top.expectKey = false;
    } else if (c === 0x2c) {
      const top = stack.at(-1);
      if (top?.keys) top.expectKey = true;
      else if (top) top.at = (top.at as number) + 1;
    }
  }
}

/** Index of the closing quote of the string opening at `start` (or the last byte if unclosed). */
function stringEnd(raw: Buffer, start: number): number {
  let at = start + 1;
  for (;;) {
    const q = raw.indexOf(QUOTE, at);
    if (q < 0) return raw.length - 1;
    let slashes = 0;
    for (let k = q - 1; k > start && raw[k] === BACKSLASH; k--) slashes++;
    if (slashes % 2 === 0) return q;
    at = q + 1;
  }
}

function keyText(raw: Buffer, start: number, end: number): string {
  const text = raw.toString('utf8', start + 1, end);
  if (!text.includes('\\')) return text;
  try {
    return JSON.parse(`"${text}"`) as string;
  } catch {
    // Malformed escapes: JSON.parse of the whole body refuses it next.
    return text;
  }
}

/** `messages[2].content` style, as the policy's errors name fields. */
function pathOf(stack: readonly Level[], last: string | undefined): string | undefined {
  let path = '';
  const levels = last === undefined ? stack : stack.slice(0, -1);
  for (const level of levels) {
    if (level.keys) path += path === '' ? String(level.at) : `.${level.at}`;
    else path += `[${level.at}]`;
  }
  if (last !== undefined) path += path === '' ? last : `.${last}`;
  return path === '' ? undefined : clip(path);
}

function clip(text: string): string {
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}
