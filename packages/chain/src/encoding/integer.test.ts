import { describe, expect, it } from 'vitest';
import { parseInteger, parseUint64 } from './integer.js';
import { parseJsonExact } from './json.js';

describe('parseInteger', () => {
  it('accepts numbers, decimal strings and bigints', () => {
    expect(parseInteger(42)).toBe(42n);
    expect(parseInteger('5000000000')).toBe(5_000_000_000n);
    expect(parseInteger('-7')).toBe(-7n);
    expect(parseInteger('18446744073709551615')).toBe(18_446_744_073_709_551_615n);
    expect(parseInteger(3n)).toBe(3n);
  });

  it('rejects floats, unsafe numbers, hex, blanks and non-numbers', () => {
    for (const bad of [1.5, 2 ** 53, Number.NaN, '1.0', '0x10', '', ' 1', '1e3', null, undefined, {}, true]) {
      expect(() => parseInteger(bad), String(bad)).toThrow(TypeError);
    }
  });

  it('parseUint64 bounds the value to 0..2^64-1', () => {
    expect(parseUint64('0')).toBe(0n);
    expect(() => parseUint64('-1')).toThrow(RangeError);
    expect(() => parseUint64('18446744073709551616')).toThrow(RangeError);
  });
});

describe('parseJsonExact', () => {
  it('keeps integers beyond 2^53 exact by turning them into strings', () => {
    const json = parseJsonExact(
      '{"balance": 20000000000000001, "small": 12, "f": 1.5e300, "s": "9007199254740993"}',
    );
    expect(json).toEqual({ balance: '20000000000000001', small: 12, f: 1.5e300, s: '9007199254740993' });
    expect(parseInteger((json as { balance: unknown }).balance)).toBe(20_000_000_000_000_001n);
  });

  it('leaves digits inside strings (with escapes) alone', () => {
    const text = '{"a":"x\\"12345678901234567890","b":[-12345678901234567890]}';
    expect(parseJsonExact(text)).toEqual({ a: 'x"12345678901234567890', b: ['-12345678901234567890'] });
  });

  it('keeps 2^53 and a large negative exact; an exponent literal stays a float', () => {
    expect(parseJsonExact('[9007199254740992, 9007199254740991, -9223372036854775808, 1e20, 123.0]')).toEqual(
      ['9007199254740992', 9007199254740991, '-9223372036854775808', 1e20, 123],
    );
  });

  it('still rejects invalid JSON', () => {
    expect(() => parseJsonExact('{"a":')).toThrow(SyntaxError);
  });
});
