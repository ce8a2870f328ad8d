// UTC calendar periods of budgets: where a day, an ISO week and a month start and end.
import { describe, expect, it } from 'vitest';
import { budgetPeriodOf } from './budget-period.js';

describe('budgetPeriodOf', () => {
  const at = new Date('2026-11-25T13:14:15Z'); // a Wednesday
  it('starts days, ISO weeks and months at 00:00 UTC', () => {
    expect(budgetPeriodOf('daily', at)).toEqual({
      tag: 'd2026-11-25',
      start: new Date('2026-11-25T00:00:00Z'),
      end: new Date('2026-11-26T00:00:00Z'),
    });
    expect(budgetPeriodOf('weekly', at)).toMatchObject({
      tag: 'w2026-11-23',
      end: new Date('2026-11-30T00:00:00Z'),
    });
    expect(budgetPeriodOf('weekly', new Date('2026-11-29T23:59:59Z')).tag).toBe('w2026-11-23');
    expect(budgetPeriodOf('weekly', new Date('2026-11-30T00:00:00Z')).tag).toBe('w2026-11-30');
    expect(budgetPeriodOf('monthly', new Date('2026-12-31T23:00:00Z'))).toEqual({
      tag: 'm2026-12',
      start: new Date('2026-12-01T00:00:00Z'),
      end: new Date('2027-01-01T00:00:00Z'),
    });
    expect(budgetPeriodOf('total', at)).toEqual({ tag: 'total', start: new Date(0), end: null });
  });
});
