// The controller's own metrics (architecture §6: prefix devshard_gateway_, bounded labels).
import { METRIC_PREFIX, type Registry, storedCopyCounter } from '@gonka-gateway/shared';
import { Counter, Gauge } from 'prom-client';

export interface ControllerMetrics {
  /** Settle attempts made past half the settle window, or close to its end (label `stage`). */
  settleWindow: Counter<'stage'>;
  /** 1 while this controller holds the leader lease and runs the schedules, else 0. */
  leader: Gauge;
  /** Rotation markers recorded (spec §3.4; label `marker`, a fixed set: upkeep/rotation-record.ts). */
  rotationEvents: Counter<'marker'>;
  /** Reads answered from a stored copy because the chain REST or the node did not answer (label `what`). */
  storedCopies: Counter<'what'>;
  /** Unsettled escrows past their retire-by height, a closed settle window included (upkeep/retire-by.ts). */
  escrowsPastRetireBy: Gauge;
}

export function createControllerMetrics(registry: Registry): ControllerMetrics {
  return {
    settleWindow: new Counter({
      name: `${METRIC_PREFIX}settle_window_late_total`,
      help: 'Settle attempts made after half of the settlement window passed (stage=half_passed) or close to its end (stage=closing).',
      labelNames: ['stage'] as const,
      registers: [registry],
    }),
    leader: new Gauge({
      name: `${METRIC_PREFIX}controller_leader`,
      help: 'Whether this controller holds the leader lease and runs the BullMQ schedules (1) or stands by (0).',
      registers: [registry],
    }),
    rotationEvents: new Counter({
      name: `${METRIC_PREFIX}rotation_events_total`,
      help: 'Escrow rotation markers recorded (escrow_rotation_*, escrow_depletion_replacement_failed), by marker.',
      labelNames: ['marker'] as const,
      registers: [registry],
    }),
    storedCopies: storedCopyCounter(registry),
    escrowsPastRetireBy: new Gauge({
      name: `${METRIC_PREFIX}escrows_past_retire_by`,
      help: 'Unsettled escrows past their retire-by height (settle window close − execution_timeout − margin − one tick), a closed window included; set by each rotation tick.',
      registers: [registry],
    }),
  };
}
