// Edge cases of devshard-protocol.md §2.5; expected texts are what Go's encoding/json produces for
// json.Unmarshal into `any` followed by Encode with SetEscapeHTML(false) (trailing newline trimmed).
import { sha256 } from '@gonka-gateway/chain';
import { describe, expect, it } from 'vitest';
import { canonicalizeJson, compareUtf8, formatGoFloat } from './canonical-json.js';
import { promptHash } from './prompt-hash.js';

const enc = (s: string) => new TextEncoder().encode(s);
const canon = (s: string) => canonicalizeJson(enc(s));

describe('canonical JSON (Go compatible)', () => {
  it('sorts keys at every level and drops whitespace', () => {
    expect(canon(' { "b" : 1 , "a" : { "d" : [ 3 , { "z":1,"y":2 } ], "c" : null } } \n')).toBe(
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });

  it('sorts keys by UTF-8 bytes: a non-BMP key after U+E000–U+FFFF keys', () => {
    expect(canon('{"\u{1F600}":1,"\uFF21":2,"a":3,"\u00e9":4}')).toBe('{"a":3,"é":4,"Ａ":2,"😀":1}');
    expect(compareUtf8('\u{1F600}', '\uFFFF')).toBeGreaterThan(0);
    expect(['\u{1F600}', '\uE000'].sort()).toEqual(['\u{1F600}', '\uE000']); // JS order differs
  });

  it('formats numbers like Go float64', () => {
    expect(
      canon(
        '[1, 1.0, -0, -0.0, 0, 1e21, 1e20, 123456789012345678901, 1e-6, 1e-7, 1.5e-7, 0.1, 1E+2, -1.25e-10]',
      ),
    ).toBe(
      '[1,1,-0,-0,0,1e+21,100000000000000000000,123456789012345680000,0.000001,1e-7,1.5e-7,0.1,100,-1.25e-10]',
    );
    expect(canon('12345678901234567890')).toBe('12345678901234567000');
    expect(canon('-1e-400')).toBe('-0');
    expect(formatGoFloat(-0)).toBe('-0');
  });

  it('rejects numbers outside float64 range, as Go does', () => {
    expect(() => canon('1e400')).toThrow();
    expect(() => canon('[-1e309]')).toThrow();
  });

  it('escapes like Go without HTML escaping', () => {
    expect(canon('"<a href=\\"x\\">&amp;</a>"')).toBe('"<a href=\\"x\\">&amp;</a>"');
    expect(canon('"\\u0000\\u001f\\b\\f\\n\\r\\t\\/\\u007f"')).toBe('"\\u0000\\u001f\\b\\f\\n\\r\\t/\u007f"');
    expect(canon('"\u2028\\u2029"')).toBe('"\\u2028\\u2029"');
    expect(canon('"\\u00e9\\ud83d\\ude00"')).toBe('"é😀"');
  });

  it('replaces invalid UTF-8 byte by byte and unpaired surrogate escapes with U+FFFD', () => {
    const bytes = Uint8Array.from([
      0x22, 0x61, 0xe2, 0x82, 0x41, 0xff, 0xed, 0xa0, 0x80, 0xf0, 0x9f, 0x98, 0x22,
    ]);
    expect(canonicalizeJson(bytes)).toBe('"a\uFFFD\uFFFDA\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD"');
    expect(canon('"\\ud800x\\udc00\\ud800\\u0041"')).toBe('"\uFFFDx\uFFFD\uFFFDA"');
    expect(canon('{"\\ud800":1,"\\udbff":2}')).toBe('{"\uFFFD":2}');
  });

  it('keeps the last of duplicate keys', () => {
    expect(canon('{"a":1,"b":2,"a":3}')).toBe('{"a":3,"b":2}');
  });

  it('rejects what Go rejects', () => {
    for (const bad of [
      '',
      ' ',
      '{"a":1,}',
      '[1,]',
      '{"a" 1}',
      '"\t"',
      "'x'",
      '01',
      '1.',
      '.5',
      '+1',
      'nul',
      '{} x',
      '\uFEFF{}',
      '"\\x"',
    ]) {
      expect(() => canon(bad), bad).toThrow();
    }
  });

  it('hashes the canonical bytes', () => {
    const body = '{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":64}';
    expect(promptHash(enc(body))).toEqual(
      sha256(enc('{"max_tokens":64,"messages":[{"content":"hi","role":"user"}],"model":"m"}')),
    );
  });
});
