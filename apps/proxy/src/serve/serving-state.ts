// The serve stage's state as a plugin: host health shared with the fleet through Redis
// (host-health.ts), the deadlines learnt per model (deadlines.ts) and the hedge budget
// (hedge-budget.ts). Host-health transitions are counted and logged with their markers
// (docs/operator-guide.md §9).
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { ProxyContext } from '../proxy-context.js';
import type { ServeDeps } from './attempt-race.js';
import { Deadlines } from './deadlines.js';
import { HedgeBudget } from './hedge-budget.js';
import { HostHealth } from './host-health.js';

declare module 'fastify' {
  interface FastifyInstance {
    serving: Omit<ServeDeps, 'sessions' | 'metrics'>;
  }
}

export const servingState = fp(
  async (app: FastifyInstance, context: ProxyContext) => {
    const serving = { ...context.config.proxy.serving, ...context.tuning.serving };
    const health = new HostHealth({
      redis: context.infra.redis,
      keys: context.keys,
      config: serving,
      ...(context.tuning.hostHealthSyncMs !== undefined
        ? { syncEveryMs: context.tuning.hostHealthSyncMs }
        : {}),
      onError: (error) => app.log.warn({ err: error }, 'host health sync failed'),
      onTransition: (t) => {
        context.metrics.hostTransitions.inc({ state: t.to });
        // Markers host_quarantined / host_probation / host_healthy.
        const entry = {
          marker: `host_${t.to}`,
          participant: t.participant,
          model: t.model,
          from: t.from,
          reason: t.reason,
          ...(t.to === 'quarantined' ? { until: new Date(t.untilMs).toISOString() } : {}),
        };
        if (t.to === 'quarantined') app.log.warn(entry, 'host quarantined');
        else app.log.info(entry, `host ${t.to}`);
      },
    });
    app.decorate('serving', {
      health,
      deadlines: new Deadlines(serving),
      budget: new HedgeBudget({
        percent: serving.hedgeBudgetPercent,
        minPerMinute: serving.hedgeMinPerMinute,
      }),
      maxAttempts: serving.maxAttempts,
    });
    app.addHook('onReady', () => health.start());
    app.addHook('onClose', () => health.stop());
  },
  { name: 'serving-state' },
);
