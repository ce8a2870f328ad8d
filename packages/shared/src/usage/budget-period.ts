// Which budget period a moment falls in (budget_period: daily | weekly | monthly | total),
// shared by the proxy (which Redis spend counter a request charges) and the controller (the spend a
// key listing shows). Periods are UTC calendar periods: a day from 00:00, an ISO week from Monday
// 00:00, a month from the 1st; `total` never ends.
import { BUDGET_PERIODS, type BudgetPeriod } from '../db/schema.js';

export { BUDGET_PERIODS, type BudgetPeriod };

export interface PeriodWindow {
  /** Part of the Redis spend key: a new period starts a new counter. */
  readonly tag: string;
  readonly start: Date;
  /** Exclusive; null for `total`. */
  readonly end: Date | null;
}

const DAY_MS = 86_400_000;

export function budgetPeriodOf(period: BudgetPeriod, at: Date): PeriodWindow {
  const y = at.getUTCFullYear();
  const m = at.getUTCMonth();
  const d = at.getUTCDate();
  switch (period) {
    case 'daily': {
      const start = new Date(Date.UTC(y, m, d));
      return { tag: `d${start.toISOString().slice(0, 10)}`, start, end: new Date(start.getTime() + DAY_MS) };
    }
    case 'weekly': {
      const sinceMonday = (at.getUTCDay() + 6) % 7;
      const start = new Date(Date.UTC(y, m, d - sinceMonday));
      return {
        tag: `w${start.toISOString().slice(0, 10)}`,
        start,
        end: new Date(start.getTime() + 7 * DAY_MS),
      };
    }
    case 'monthly': {
      const start = new Date(Date.UTC(y, m, 1));
      return { tag: `m${start.toISOString().slice(0, 7)}`, start, end: new Date(Date.UTC(y, m + 1, 1)) };
    }
    case 'total':
      return { tag: 'total', start: new Date(0), end: null };
  }
}
