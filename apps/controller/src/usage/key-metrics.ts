// Spend metrics per API key (docs/keys-and-usage.md, "Metrics"), bounded: the operator's
// metrics_top_keys (default 10, at most 100) keys with the highest spend in their current period
// get their own series (label `key` = the key id), every other stored key is summed into
// key="other", and DEVSHARD_API_KEYS are key="env". Computed when Prometheus scrapes, from the same
// views the admin API lists. Rejections by reason are counted where they happen, in the proxies
// (key_rejections_total).
import { METRIC_PREFIX, type Registry } from '@gonka-gateway/shared';
import { Gauge } from 'prom-client';
import type { ControllerContext } from '../controller-context.js';
import { envKeyView, keyViews, readKeyRows } from '../keys/key-store.js';
import { readUsageSettings } from './usage-retention.js';

export function registerKeyMetrics(
  registry: Registry,
  ctx: ControllerContext,
  envKeyDigests: readonly Buffer[],
): void {
  const spendGauge = new Gauge({
    name: `${METRIC_PREFIX}key_spend_ngonka`,
    help: 'Spend of API keys in their current budget period (ngonka): the top keys by spend by id, the rest as key="other", DEVSHARD_API_KEYS as key="env".',
    labelNames: ['key'] as const,
    registers: [registry],
    async collect() {
      await scrape();
    },
  });
  const remainingGauge = new Gauge({
    name: `${METRIC_PREFIX}key_budget_remaining_ngonka`,
    help: 'Budget left in the current period (ngonka) of the top keys by spend that have a budget.',
    labelNames: ['key'] as const,
    registers: [registry],
    async collect() {
      await scrape();
    },
  });
  // Prometheus collects metrics in parallel: both gauges share one read per scrape.
  let pending: Promise<void> | undefined;
  const scrape = () => {
    pending ??= refresh().finally(() => {
      pending = undefined;
    });
    return pending;
  };
  const refresh = async () => {
    const [{ metrics_top_keys: top }, views] = await Promise.all([
      readUsageSettings(ctx.sql),
      readKeyRows(ctx).then((rows) =>
        keyViews(
          ctx,
          rows.filter((r) => r.revoked_at === null),
        ),
      ),
    ]);
    views.sort((a, b) => {
      const d = BigInt(b.spend_ngonka) - BigInt(a.spend_ngonka);
      return d > 0n ? 1 : d < 0n ? -1 : Number(a.id) - Number(b.id);
    });
    spendGauge.reset();
    remainingGauge.reset();
    let other = 0n;
    views.forEach((v, i) => {
      if (i < top) {
        spendGauge.set({ key: v.id }, Number(v.spend_ngonka));
        if (v.budget_remaining_ngonka !== null)
          remainingGauge.set({ key: v.id }, Number(v.budget_remaining_ngonka));
      } else {
        other += BigInt(v.spend_ngonka);
      }
    });
    if (views.length > top) spendGauge.set({ key: 'other' }, Number(other));
    if (envKeyDigests.length > 0) {
      spendGauge.set({ key: 'env' }, Number((await envKeyView(ctx, envKeyDigests)).spend_ngonka));
    }
  };
}
