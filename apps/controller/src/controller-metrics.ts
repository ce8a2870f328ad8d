// The controller's own metrics (architecture §6: prefix devshard_gateway_, bounded labels).
import { METRIC_PREFIX, type Registry } from '@gonka-gateway/shared';
import { Counter } from 'prom-client';

export interface ControllerMetrics {
  /** Settle attempts made past half the settle window, or close to its end (label `stage`). */
  settleWindow: Counter<'stage'>;
  /** Rotation markers recorded (spec §3.4; label `marker`, a fixed set: upkeep/rotation-record.ts). */
  rotationEvents: Counter<'marker'>;
}

export function createControllerMetrics(registry: Registry): ControllerMetrics {
  return {
    settleWindow: new Counter({
      name: `${METRIC_PREFIX}settle_window_late_total`,
      help: 'Settle attempts made after half of the settlement window passed (stage=half_passed) or close to its end (stage=closing).',
      labelNames: ['stage'] as const,
      registers: [registry],
    }),
    rotationEvents: new Counter({
      name: `${METRIC_PREFIX}rotation_events_total`,
      help: 'Escrow rotation markers recorded (escrow_rotation_*, escrow_depletion_replacement_failed), by marker.',
      labelNames: ['marker'] as const,
      registers: [registry],
    }),
  };
}
