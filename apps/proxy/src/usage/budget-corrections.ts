// Budget spend follows the ledger's real cost (docs/keys-and-usage.md, "Budgets"): a request
// charges its key's period counter with the cost known when it ended (usually the session's
// reservation), and when the cost reconciler later finalizes the row to the Finish's charge, the
// difference is applied to the counter of the period the request was answered in.
import { budgetPeriodOf } from '@gonka-gateway/shared';
import type { Admission } from '../chat/admission.js';
import type { KeyDirectory } from '../gate/key-directory.js';
import type { CostCorrection } from './cost-reconciler.js';

export async function followRealCosts(
  corrections: readonly CostCorrection[],
  directory: Pick<KeyDirectory, 'keys'>,
  admission: Pick<Admission, 'adjustSpend'>,
): Promise<void> {
  const budgeted = new Map(directory.keys.filter((k) => k.budget !== null).map((k) => [`key-${k.id}`, k]));
  for (const c of corrections) {
    const key = budgeted.get(c.keyId);
    if (!key) continue;
    await admission.adjustSpend(key.id, budgetPeriodOf(key.period, new Date(c.atMs)).tag, c.delta);
  }
}
