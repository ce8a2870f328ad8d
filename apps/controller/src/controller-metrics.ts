// The controller's own metrics (architecture §6: prefix devshard_gateway_, bounded labels).
import { METRIC_PREFIX, type Registry } from '@gonka-gateway/shared';
import { Counter } from 'prom-client';

export interface ControllerMetrics {
  /** Settle attempts made past half the settle window, or close to its end (label `stage`). */
  settleWindow: Counter<'stage'>;
}

export function createControllerMetrics(registry: Registry): ControllerMetrics {
  return {
    settleWindow: new Counter({
      name: `${METRIC_PREFIX}settle_window_late_total`,
      help: 'Settle attempts made after half of the settlement window passed (stage=half_passed) or close to its end (stage=closing).',
      labelNames: ['stage'] as const,
      registers: [registry],
    }),
  };
}
