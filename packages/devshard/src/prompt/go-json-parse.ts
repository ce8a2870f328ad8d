// Parses JSON bytes into generic values exactly as Go's json.Unmarshal into `any` does
// (devshard-protocol.md §2.5): numbers become float64 (out-of-range is an error), invalid UTF-8 inside
// strings becomes one U+FFFD per offending byte (utf8.DecodeRune), an unpaired surrogate escape
// becomes U+FFFD, duplicate object keys keep the last value. The result feeds the canonical encoder.

export type GoJsonValue = null | boolean | number | string | GoJsonValue[] | GoJsonObject;
export type GoJsonObject = Map<string, GoJsonValue>;

export class GoJsonSyntaxError extends Error {
  constructor(message: string, offset: number) {
    super(`${message} at offset ${offset}`);
    this.name = 'GoJsonSyntaxError';
  }
}

const REPLACEMENT = 0xfffd;
const MAX_DEPTH = 10_000; // Go's decoder limit

/** Length of the valid UTF-8 sequence at `i` (Go's utf8.DecodeRune rules), or 0 if invalid. */
function utf8SequenceLength(b: Uint8Array, i: number): number {
  const c = b[i]!;
  const c1 = b[i + 1];
  const cont = (x: number | undefined) => x !== undefined && x >= 0x80 && x <= 0xbf;
  if (c >= 0xc2 && c <= 0xdf) return cont(c1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    const lo = c === 0xe0 ? 0xa0 : 0x80;
    const hi = c === 0xed ? 0x9f : 0xbf;
    return c1 !== undefined && c1 >= lo && c1 <= hi && cont(b[i + 2]) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const lo = c === 0xf0 ? 0x90 : 0x80;
    const hi = c === 0xf4 ? 0x8f : 0xbf;
    return c1 !== undefined && c1 >= lo && c1 <= hi && cont(b[i + 2]) && cont(b[i + 3]) ? 4 : 0;
  }
  return 0;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

class Parser {
  pos = 0;
  depth = 0;

  constructor(private readonly b: Uint8Array) {}

  fail(message: string): never {
    throw new GoJsonSyntaxError(message, this.pos);
  }

  skipWs(): void {
    const b = this.b;
    while (this.pos < b.length) {
      const c = b[this.pos];
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) this.pos++;
      else break;
    }
  }

  value(): GoJsonValue {
    this.skipWs();
    const c = this.b[this.pos];
    if (c === undefined) this.fail('unexpected end of JSON input');
    if (c === 0x7b) return this.object();
    if (c === 0x5b) return this.array();
    if (c === 0x22) return this.string();
    if (c === 0x74) return this.literal('true', true);
    if (c === 0x66) return this.literal('false', false);
    if (c === 0x6e) return this.literal('null', null);
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return this.number();
    return this.fail('invalid character');
  }

  literal<T>(word: string, value: T): T {
    for (let i = 0; i < word.length; i++) {
      if (this.b[this.pos + i] !== word.charCodeAt(i)) this.fail(`invalid literal, expected ${word}`);
    }
    this.pos += word.length;
    return value;
  }

  enter(): void {
    if (++this.depth > MAX_DEPTH) this.fail('exceeded max depth');
  }

  object(): GoJsonObject {
    this.enter();
    this.pos++;
    const out: GoJsonObject = new Map();
    this.skipWs();
    if (this.b[this.pos] === 0x7d) {
      this.pos++;
      this.depth--;
      return out;
    }
    for (;;) {
      this.skipWs();
      if (this.b[this.pos] !== 0x22) this.fail('expected object key');
      const key = this.string();
      this.skipWs();
      if (this.b[this.pos] !== 0x3a) this.fail("expected ':'");
      this.pos++;
      out.set(key, this.value());
      this.skipWs();
      const c = this.b[this.pos];
      this.pos++;
      if (c === 0x2c) continue;
      if (c === 0x7d) break;
      this.pos--;
      this.fail("expected ',' or '}'");
    }
    this.depth--;
    return out;
  }

  array(): GoJsonValue[] {
    this.enter();
    this.pos++;
    const out: GoJsonValue[] = [];
    this.skipWs();
    if (this.b[this.pos] === 0x5d) {
      this.pos++;
      this.depth--;
      return out;
    }
    for (;;) {
      out.push(this.value());
      this.skipWs();
      const c = this.b[this.pos];
      this.pos++;
      if (c === 0x2c) continue;
      if (c === 0x5d) break;
      this.pos--;
      this.fail("expected ',' or ']'");
    }
    this.depth--;
    return out;
  }

  number(): number {
    const b = this.b;
    const start = this.pos;
    const digit = (x: number | undefined) => x !== undefined && x >= 0x30 && x <= 0x39;
    if (b[this.pos] === 0x2d) this.pos++;
    if (b[this.pos] === 0x30) this.pos++;
    else if (digit(b[this.pos])) while (digit(b[this.pos])) this.pos++;
    else this.fail('invalid number');
    if (b[this.pos] === 0x2e) {
      this.pos++;
      if (!digit(b[this.pos])) this.fail('invalid number');
      while (digit(b[this.pos])) this.pos++;
    }
    if (b[this.pos] === 0x65 || b[this.pos] === 0x45) {
      this.pos++;
      if (b[this.pos] === 0x2b || b[this.pos] === 0x2d) this.pos++;
      if (!digit(b[this.pos])) this.fail('invalid number');
      while (digit(b[this.pos])) this.pos++;
    }
    // JS Number() and Go's strconv.ParseFloat both round correctly; Go rejects overflow.
    const value = Number(utf8.decode(b.subarray(start, this.pos)));
    if (!Number.isFinite(value)) this.fail('number out of float64 range');
    return value;
  }

  hex4(at: number): number {
    let v = 0;
    for (let i = 0; i < 4; i++) {
      const c = this.b[at + i];
      let d: number;
      if (c === undefined) return -1;
      if (c >= 0x30 && c <= 0x39) d = c - 0x30;
      else if (c >= 0x41 && c <= 0x46) d = c - 0x37;
      else if (c >= 0x61 && c <= 0x66) d = c - 0x57;
      else return -1;
      v = v * 16 + d;
    }
    return v;
  }

  string(): string {
    const b = this.b;
    this.pos++; // opening quote
    // The usual key or value: printable ASCII without escapes up to the closing quote. Its bytes are
    // its characters, so no decoding state is needed (the general path below gives the same string).
    for (let i = this.pos; i < b.length; i++) {
      const c = b[i]!;
      if (c === 0x22) {
        const plain = utf8.decode(b.subarray(this.pos, i));
        this.pos = i + 1;
        return plain;
      }
      if (c < 0x20 || c >= 0x80 || c === 0x5c) break;
    }
    const parts: string[] = [];
    const codes: number[] = [];
    const flushCodes = () => {
      if (codes.length > 0) {
        parts.push(String.fromCodePoint(...codes));
        codes.length = 0;
      }
    };
    // Bounded so String.fromCodePoint never receives an oversized argument list.
    const pushCode = (code: number) => {
      codes.push(code);
      if (codes.length >= 4096) flushCodes();
    };
    let runStart = this.pos;
    const flushRun = (end: number) => {
      if (end > runStart) {
        flushCodes();
        parts.push(utf8.decode(b.subarray(runStart, end)));
      }
    };
    for (;;) {
      const c = b[this.pos];
      if (c === undefined) this.fail('unexpected end of JSON input');
      if (c === 0x22) {
        flushRun(this.pos);
        this.pos++;
        break;
      }
      if (c < 0x20) this.fail('invalid character in string literal');
      if (c < 0x80 && c !== 0x5c) {
        this.pos++;
        continue;
      }
      if (c >= 0x80) {
        const n = utf8SequenceLength(b, this.pos);
        if (n > 0) {
          this.pos += n;
          continue;
        }
        flushRun(this.pos);
        pushCode(REPLACEMENT);
        this.pos++;
        runStart = this.pos;
        continue;
      }
      // Backslash escape.
      flushRun(this.pos);
      const e = b[this.pos + 1];
      this.pos += 2;
      switch (e) {
        case 0x22:
        case 0x5c:
        case 0x2f:
          pushCode(e);
          break;
        case 0x62:
          pushCode(0x08);
          break;
        case 0x66:
          pushCode(0x0c);
          break;
        case 0x6e:
          pushCode(0x0a);
          break;
        case 0x72:
          pushCode(0x0d);
          break;
        case 0x74:
          pushCode(0x09);
          break;
        case 0x75: {
          let r = this.hex4(this.pos);
          if (r < 0) this.fail('invalid \\u escape');
          this.pos += 4;
          if (r >= 0xd800 && r <= 0xdfff) {
            // A high surrogate followed by an escaped low surrogate is one character; anything else
            // is U+FFFD and the following escape, if any, is read on its own (Go's unquote).
            const lo = b[this.pos] === 0x5c && b[this.pos + 1] === 0x75 ? this.hex4(this.pos + 2) : -1;
            if (r <= 0xdbff && lo >= 0xdc00 && lo <= 0xdfff) {
              r = 0x10000 + ((r - 0xd800) << 10) + (lo - 0xdc00);
              this.pos += 6;
            } else {
              r = REPLACEMENT;
            }
          }
          pushCode(r);
          break;
        }
        default:
          this.pos -= 1;
          this.fail('invalid escape in string literal');
      }
      runStart = this.pos;
    }
    flushCodes();
    return parts.length === 1 ? parts[0]! : parts.join('');
  }
}

/** Parses a complete JSON document; throws GoJsonSyntaxError where Go's json.Unmarshal would fail. */
export function parseGoJson(bytes: Uint8Array): GoJsonValue {
  const p = new Parser(bytes);
  const value = p.value();
  p.skipWs();
  if (p.pos !== bytes.length) p.fail('invalid character after top-level value');
  return value;
}
