// Ownership as a plugin: the escrows this replica owns (proxy-ownership.ts: leases, sessions,
// claims), the fleet's pool as Redis shows it (pool-snapshot.ts) and the models Postgres says the
// fleet serves (fleet-models.ts). On close every owned escrow is handed back, after the server has
// stopped taking requests and the in-flight ones finished (architecture §2.6).
import { storedCopyCounter } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { type ProxyContext, plainSql } from '../proxy-context.js';
import { FleetModels } from './fleet-models.js';
import { PoolSnapshot } from './pool-snapshot.js';
import { createProxyOwnership, type ProxyOwnership } from './proxy-ownership.js';

declare module 'fastify' {
  interface FastifyInstance {
    owned: {
      readonly ownership: ProxyOwnership;
      readonly pool: PoolSnapshot;
      readonly fleetModels: FleetModels;
    };
  }
}

export const ownershipState = fp(
  async (
    app: FastifyInstance,
    context: ProxyContext & { registry: Parameters<typeof storedCopyCounter>[0] },
  ) => {
    const { config, tuning } = context;
    const onError = (what: string) => (error: Error) => app.log.warn({ err: error }, what);
    // Reads the public node could not answer, served from a stored copy (docs/operator-guide.md §9).
    const storedCopies = storedCopyCounter(context.registry);
    const ownership = createProxyOwnership({
      config,
      sql: plainSql(context),
      redis: context.infra.redis,
      env: context.env,
      leaseTtlMs: tuning.leaseTtlMs ?? config.proxy.leaseTtlMs,
      allowPrivateHosts: tuning.allowPrivateHosts ?? config.proxy.allowPrivateHosts,
      flushIdleMs: tuning.flushIdleMs ?? config.proxy.flushIdleMs,
      ...(tuning.maintenanceEveryMs !== undefined ? { maintenanceEveryMs: tuning.maintenanceEveryMs } : {}),
      ...(context.log ? { log: context.log } : {}),
      onSessionEvent: context.metrics.onSessionEvent,
      onStoredCopy: () => storedCopies.inc({ what: 'participants' }),
      subscriber: context.subscriber,
    });
    const pool = new PoolSnapshot({
      redis: context.infra.redis,
      keys: context.keys,
      directory: ownership.runtime.directory,
      subscriber: context.subscriber,
      onError: onError('pool snapshot read failed'),
      onRead: (escrows) => app.gate.keyDirectory.followPool(escrows.map((e) => e.escrowId)),
    });
    // The models Postgres says the fleet serves, for when the pool snapshot (Redis) misses one.
    const fleetModels = new FleetModels({
      sql: plainSql(context),
      subscriber: context.subscriber,
      channel: context.keys.poolChanges,
      onError: onError('fleet models read failed'),
    });
    app.decorate('owned', { ownership, pool, fleetModels });
    app.addHook('onReady', async () => {
      await ownership.start();
      await pool.start();
      await fleetModels.start();
    });
    app.addHook('onClose', async () => {
      await ownership.close();
      pool.stop();
      fleetModels.stop();
    });
  },
  { name: 'ownership-state', dependencies: ['gate-state'] },
);
