import { describe, expect, it } from 'vitest';
import { fixedStatement } from './fixed-statement.js';

describe('fixedStatement', () => {
  it('numbers every occurrence of a name, spliced statements after the ones before them', () => {
    const inner = fixedStatement`b as (select ${'x'}::int, ${'y'}::text), c as (select ${'x'}::int)`;
    const outer = fixedStatement`with a as (select ${'id'}::numeric), ${inner} select ${'id'}::numeric`;
    expect(outer.text).toBe(
      'with a as (select $1::numeric), b as (select $2::int, $3::text), c as (select $4::int) select $5::numeric',
    );
    expect(outer.values({ id: '7', x: 1, y: 'why' })).toEqual(['7', 1, 'why', 1, '7']);
  });

  it('keeps a statement without parameters, and one that starts or ends with a splice', () => {
    const plain = fixedStatement`select 1`;
    expect(plain.text).toBe('select 1');
    expect(plain.values({})).toEqual([]);
    const edge = fixedStatement`${fixedStatement`${'a'}`}${'b'}`;
    expect(edge.text).toBe('$1$2');
    expect(edge.values({ a: null, b: true })).toEqual([null, true]);
  });
});
