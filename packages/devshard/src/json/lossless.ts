// JSON with exact 64-bit integers. Go peers write uint64/int64 as JSON numbers (devshard-protocol.md
// §4.1), which JSON.parse rounds above 2^53; this parser keeps every integer literal as a bigint and
// every other number as a float, and the writer prints bigints as bare digits.

export type JsonValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };
/** What the writer accepts: JSON values whose object members may be `undefined` (omitted). */
export type JsonWritable =
  | null
  | boolean
  | number
  | bigint
  | string
  | readonly JsonWritable[]
  | { readonly [key: string]: JsonWritable | undefined };

const INTEGER = /^-?(0|[1-9][0-9]*)$/;
const NUMBER = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;

class Reader {
  pos = 0;
  constructor(private readonly s: string) {}

  fail(what: string): never {
    throw new SyntaxError(`JSON: ${what} at offset ${this.pos}`);
  }

  ws(): void {
    while (this.pos < this.s.length) {
      const c = this.s.charCodeAt(this.pos);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) this.pos++;
      else break;
    }
  }

  value(): JsonValue {
    this.ws();
    const c = this.s[this.pos];
    if (c === '{') return this.object();
    if (c === '[') return this.array();
    if (c === '"') return this.string();
    if (this.s.startsWith('true', this.pos)) return this.word(4, true);
    if (this.s.startsWith('false', this.pos)) return this.word(5, false);
    if (this.s.startsWith('null', this.pos)) return this.word(4, null);
    NUMBER.lastIndex = this.pos;
    const m = NUMBER.exec(this.s);
    if (!m) this.fail('unexpected character');
    this.pos += m[0].length;
    return INTEGER.test(m[0]) ? BigInt(m[0]) : Number(m[0]);
  }

  word<T>(length: number, value: T): T {
    this.pos += length;
    return value;
  }

  string(): string {
    const start = this.pos;
    this.pos++;
    // Without an escape or a control character the text between the quotes is the value itself
    // (base64, keys, most strings): no JSON.parse of a slice then; anything else goes through it.
    let plain = true;
    for (;;) {
      const c = this.s.charCodeAt(this.pos);
      if (Number.isNaN(c)) this.fail('unterminated string');
      if (c === 0x22) break;
      if (c === 0x5c) {
        plain = false;
        this.pos += 2;
      } else {
        if (c < 0x20) plain = false;
        this.pos++;
      }
    }
    this.pos++;
    if (plain) return this.s.slice(start + 1, this.pos - 1);
    return JSON.parse(this.s.slice(start, this.pos)) as string;
  }

  object(): JsonObject {
    this.pos++;
    const out: JsonObject = Object.create(null);
    this.ws();
    if (this.s[this.pos] === '}') {
      this.pos++;
      return out;
    }
    for (;;) {
      this.ws();
      if (this.s[this.pos] !== '"') this.fail('expected key');
      const key = this.string();
      this.ws();
      if (this.s[this.pos] !== ':') this.fail("expected ':'");
      this.pos++;
      out[key] = this.value();
      this.ws();
      const c = this.s[this.pos++];
      if (c === ',') continue;
      if (c === '}') return out;
      this.fail("expected ',' or '}'");
    }
  }

  array(): JsonValue[] {
    this.pos++;
    const out: JsonValue[] = [];
    this.ws();
    if (this.s[this.pos] === ']') {
      this.pos++;
      return out;
    }
    for (;;) {
      out.push(this.value());
      this.ws();
      const c = this.s[this.pos++];
      if (c === ',') continue;
      if (c === ']') return out;
      this.fail("expected ',' or ']'");
    }
  }
}

/** Parses JSON text; integer literals become bigint, other numbers become number. */
export function parseJsonLossless(text: string): JsonValue {
  const r = new Reader(text);
  const v = r.value();
  r.ws();
  if (r.pos !== text.length) r.fail('trailing characters');
  return v;
}

const isArray = (v: unknown): v is readonly JsonWritable[] => Array.isArray(v);

/** JSON text with bigints as bare integers; `undefined` object members are skipped. */
export function stringifyJsonLossless(value: JsonWritable | undefined): string {
  if (value === undefined) throw new TypeError('cannot stringify undefined');
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('non-finite number');
    return JSON.stringify(value);
  }
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (isArray(value)) return `[${value.map((v) => stringifyJsonLossless(v)).join(',')}]`;
  const members: string[] = [];
  for (const [k, v] of Object.entries(value)) {
    if (v !== undefined) members.push(`${JSON.stringify(k)}:${stringifyJsonLossless(v)}`);
  }
  return `{${members.join(',')}}`;
}
