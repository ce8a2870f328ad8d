// The usage ledger as a plugin (usage-ledger.ts): usage events from every replica written to
// Postgres in batches, and their final cost read from the owned sessions; a correction follows the
// real cost into the key's budget and the admission counts (budget-corrections.ts).
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { type ProxyContext, plainSql } from '../proxy-context.js';
import { followRealCosts } from './budget-corrections.js';
import { UsageLedger } from './usage-ledger.js';

export const usageState = fp(
  async (app: FastifyInstance, context: ProxyContext) => {
    const usage = new UsageLedger({
      redis: context.infra.redis,
      keys: context.keys,
      sql: plainSql(context),
      replicaId: context.config.proxy.replicaId,
      sessions: app.owned.ownership.runtime.sessions,
      ...(context.tuning.usageReconcileEveryMs !== undefined
        ? { reconcileEveryMs: context.tuning.usageReconcileEveryMs }
        : {}),
      onCorrections: (corrections) =>
        followRealCosts(corrections, app.gate.keyDirectory, app.admitting.admission),
      onError: (error) => app.log.warn({ err: error }, 'usage ledger'),
    });
    app.addHook('onReady', () => usage.start());
    app.addHook('onClose', () => usage.stop());
  },
  { name: 'usage-state', dependencies: ['gate-state', 'ownership-state', 'admission-state'] },
);
