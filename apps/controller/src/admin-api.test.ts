// admin-api.ts imports nothing (the console type-checks it alone), so the value lists it shares with
// packages/shared are written out there a second time. This keeps the two the same, both ways: the
// type assertions when the project is type-checked, and the same lists read from admin-api.ts's
// text when the suite runs.
import { readFileSync } from 'node:fs';
import { BUDGET_PERIODS, HOST_HEALTH_STATES } from '@gonka-gateway/shared';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { HostView, KeyBudgetPeriod } from './admin-api.js';

const source = readFileSync(new URL('./admin-api.ts', import.meta.url), 'utf8');

/** The string literals of the union that follows `declaration` (after `within`) in admin-api.ts. */
function unionAfter(declaration: string, within = ''): string[] {
  const text = source.slice(source.indexOf(within));
  const at = text.indexOf(declaration);
  expect(at, declaration).toBeGreaterThanOrEqual(0);
  const union = /^[^;]*/.exec(text.slice(at + declaration.length))![0];
  return [...union.matchAll(/'([^']*)'/g)].map((m) => m[1]!).sort();
}

describe('admin API value lists', () => {
  it('KeyBudgetPeriod is the shared BUDGET_PERIODS', () => {
    expectTypeOf<KeyBudgetPeriod>().toEqualTypeOf<(typeof BUDGET_PERIODS)[number]>();
    expect(unionAfter('export type KeyBudgetPeriod =')).toEqual([...BUDGET_PERIODS].sort());
  });

  it("a host's state is one of the shared HOST_HEALTH_STATES", () => {
    expectTypeOf<HostView['state']>().toEqualTypeOf<(typeof HOST_HEALTH_STATES)[number]>();
    expect(unionAfter('  state:', 'export interface HostView')).toEqual([...HOST_HEALTH_STATES].sort());
  });
});
