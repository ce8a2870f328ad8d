// Go-compatible canonical JSON (devshard-protocol.md §2.5): the reference re-encodes the parsed
// prompt with encoding/json (map keys sorted by UTF-8 bytes, SetEscapeHTML(false), no whitespace, no
// trailing newline). Differences from JSON.stringify handled here: -0 prints as "-0", U+2028 and
// U+2029 are escaped, keys sort by code point (UTF-8 byte order) rather than UTF-16 unit.
import { type GoJsonValue, parseGoJson } from './go-json-parse.js';

/** Go's float64 formatting: shortest round-trip; 'e' form below 1e-6 and from 1e21, like JS. */
export function formatGoFloat(x: number): string {
  if (Object.is(x, -0)) return '-0';
  return String(x);
}

const ESCAPES: Record<string, string> = {
  '"': '\\"',
  '\\': '\\\\',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029',
};

/** Go's encodeState.string with HTML escaping off; the input never holds a lone surrogate. */
export function quoteGoString(s: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what Go escapes
  const escaped = s.replace(/["\\\u0000-\u001f\u2028\u2029]/g, (ch) => {
    const short = ESCAPES[ch];
    if (short) return short;
    return `\\u00${ch.charCodeAt(0).toString(16).padStart(2, '0')}`;
  });
  return `"${escaped}"`;
}

/** Orders strings by their UTF-8 bytes, which is code-point order. */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (non-BMP) sort above U+E000–U+FFFF in code-point order but below in UTF-16.
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys) return xs ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}

function encode(value: GoJsonValue, out: string[]): void {
  if (value === null) out.push('null');
  else if (typeof value === 'boolean') out.push(value ? 'true' : 'false');
  else if (typeof value === 'number') out.push(formatGoFloat(value));
  else if (typeof value === 'string') out.push(quoteGoString(value));
  else if (Array.isArray(value)) {
    out.push('[');
    value.forEach((item, i) => {
      if (i > 0) out.push(',');
      encode(item, out);
    });
    out.push(']');
  } else {
    out.push('{');
    const keys = [...value.keys()].sort(compareUtf8);
    keys.forEach((key, i) => {
      if (i > 0) out.push(',');
      out.push(quoteGoString(key), ':');
      encode(value.get(key)!, out);
    });
    out.push('}');
  }
}

/** Canonical JSON text of a JSON document given as bytes; throws on input Go's decoder rejects. */
export function canonicalizeJson(bytes: Uint8Array): string {
  const out: string[] = [];
  encode(parseGoJson(bytes), out);
  return out.join('');
}
