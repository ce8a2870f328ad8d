import { randomUUID } from 'node:crypto';
import type { ChainClient } from '@gonka-gateway/chain';
import type { Clock } from '@gonka-gateway/devshard/session';
import {
  chainClientFor,
  createFastify,
  errorHandling,
  type GatewayConfig,
  type Infrastructure,
  type Logger,
  metricsRoute,
  openPlainPool,
  type Registry,
  redisKeys,
} from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import { adminAuth } from './admin/admin-auth.js';
import { auditRoutes } from './admin/audit-routes.js';
import { debugRoutes } from './admin/debug-routes.js';
import { devshardsRoutes } from './admin/devshards-routes.js';
import { escrowsRoutes } from './admin/escrows-routes.js';
import { emptyIdFinalizeRoute, finalizeRoutes } from './admin/finalize-routes.js';
import { hostsRoutes } from './admin/hosts-routes.js';
import { keysRoutes } from './admin/keys-routes.js';
import { requestsRoutes } from './admin/requests-routes.js';
import { settingsRoutes } from './admin/settings-routes.js';
import { settleRoutes } from './admin/settle-routes.js';
import { summaryRoutes } from './admin/summary-routes.js';
import { usageRoutes } from './admin/usage-routes.js';
import { consoleRoutes } from './console/console-plugin.js';
import { type ControllerContext, createControllerContext } from './controller-context.js';
import { createControllerMetrics } from './controller-metrics.js';
import { bootstrapEscrows } from './escrow/bootstrap.js';
import { startControllerJobs } from './jobs/workers.js';
import { healthRoute } from './routes/health.js';
import { openApiRoutes } from './routes/openapi.js';
import { registerKeyMetrics } from './usage/key-metrics.js';

export interface ControllerDeps {
  config: GatewayConfig;
  infra: Pick<Infrastructure, 'database' | 'redis'>;
  registry: Registry;
  logger?: Logger;
  /** Defaults to a client on the configured chain REST / tx-query / public node bases. */
  chain?: ChainClient;
  /** Where private_key_env names are looked up; default process.env. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Unordered-tx clock in ns (tests on the devnet pass its clock). */
  nowNs?: () => bigint;
  poll?: { intervalMs: number; timeoutMs: number };
  /** Session clock of the sessions the controller opens (tests: the devnet clock). */
  sessionClock?: Clock;
  /** How long finalize waits for an owner to hand an escrow back (default 30 s). */
  drainWaitMs?: number;
  /**
   * This start created the settings row (first start): register the escrows of DEVSHARDS_JSON /
   * DEVSHARD_ESCROW_ID (spec §2.10). Restarts pass false.
   */
  firstStart?: boolean;
  /**
   * How long POST /v1/admin/escrows waits for its create job before answering 202 (default: the
   * poll timeout + 15 s, so a create that ends in time answers as it always did).
   */
  createWaitMs?: number;
  /** Run the BullMQ workers and schedules here (default true); queues exist either way. */
  jobs?: boolean;
}

/** How the controller polls a broadcast tx until it is included (or its outcome is unknown). */
const POLL_INTERVAL_MS = 2_000;

/** The control-plane app (architecture.md §1): admin API and job workers hang off this. */
export async function buildControllerApp(deps: ControllerDeps): Promise<FastifyInstance> {
  const app = createFastify(deps.logger);
  const poll = deps.poll ?? {
    intervalMs: POLL_INTERVAL_MS,
    timeoutMs: deps.config.controller.txPollTimeoutMs,
  };
  // Not infra.database.sql (drizzle's handle): see openPlainPool.
  const sql = openPlainPool(deps.config.databaseUrl, { max: 10, applicationName: 'controller' });
  app.addHook('onClose', () => sql.end({ timeout: 5 }));
  const ctx: ControllerContext = createControllerContext({
    sql,
    redis: deps.infra.redis,
    keys: redisKeys(deps.config.redis.keyPrefix),
    chain: deps.chain ?? chainClientFor(deps.config),
    env: deps.env ?? process.env,
    encryptionKey: deps.config.encryptionKey,
    gasLimit: deps.config.chain.gasLimit,
    logger: app.log as unknown as Logger,
    poll,
    ...(deps.nowNs ? { nowNs: deps.nowNs } : {}),
    ...(deps.sessionClock ? { sessionClock: deps.sessionClock } : {}),
    storageDir: deps.config.storageDir,
    controllerId: `controller-${randomUUID().slice(0, 8)}`,
    drainWaitMs: deps.drainWaitMs ?? 30_000,
    settleTiming: {
      tickMs: deps.config.controller.rotationTickMs,
      marginMs: deps.config.controller.settleMarginMs,
    },
    metrics: createControllerMetrics(deps.registry),
  });
  const jobs = await startControllerJobs(ctx, {
    redisUrl: deps.config.redis.url,
    workers: deps.jobs ?? true,
    // One knob for "how soon a dead holder is replaced", escrow owners and the leader alike.
    leaderTtlMs: deps.config.proxy.leaseTtlMs,
    rotationTickMs: deps.config.controller.rotationTickMs,
    jobLockMs: deps.config.controller.jobLockMs,
  });
  app.addHook('onClose', () => jobs.close());
  registerKeyMetrics(deps.registry, ctx, deps.config.userKeyHashes);
  await app.register(errorHandling);
  // Before every other route: it collects their schemas.
  await openApiRoutes(app);
  await app.register(metricsRoute, { registry: deps.registry });
  await app.register(healthRoute, {
    infra: deps.infra,
    role: () => ({ controller_id: ctx.controllerId, leader: jobs.leading() }),
  });
  await app.register(emptyIdFinalizeRoute);
  await app.register(async (admin) => {
    await adminAuth(admin, { adminKeyHash: deps.config.adminKeyHash, sql: ctx.sql });
    await admin.register(escrowsRoutes, {
      ctx,
      jobs,
      waitMs: deps.createWaitMs ?? poll.timeoutMs + 15_000,
    });
    await admin.register(devshardsRoutes, { ctx });
    await admin.register(settleRoutes, { ctx, jobs });
    await admin.register(settingsRoutes, {
      ctx,
      // Rotation switched on (or changed) acts now, not at the next scheduled tick (spec §3.4).
      onChange: (s) =>
        s.rotationOn &&
        jobs
          .kickRotation(s.revision)
          .catch((err: Error) => ctx.logger.warn({ err: err.message }, 'rotation kick failed')),
    });
    await admin.register(finalizeRoutes, { ctx });
    await admin.register(auditRoutes, { ctx });
    await admin.register(debugRoutes, { ctx });
    await admin.register(keysRoutes, { ctx, envKeyDigests: deps.config.userKeyHashes });
    await admin.register(usageRoutes, { ctx });
    await admin.register(hostsRoutes, { ctx });
    await admin.register(requestsRoutes, { ctx });
    await admin.register(summaryRoutes, { ctx });
  });
  // Static files only: every call the page makes goes to the admin routes above.
  await app.register(consoleRoutes);
  if (deps.firstStart) await bootstrapEscrows(ctx, deps.config.escrowMode);
  return app;
}
