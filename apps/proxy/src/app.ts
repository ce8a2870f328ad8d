// The data-plane app (architecture §1, §5), its folders in the order a request meets them: gate/
// (who is calling, disabled mode, settings), chat/ (policy, admission, routing, serving), ownership/
// (the escrows this replica owns and the fleet's pool), routes/ (status, models, health, controller).
// Every dependency is passed in; a test builds the app with real Postgres/Redis in a few lines.

import { randomUUID } from 'node:crypto';
import {
  chainClientFor,
  createFastify,
  errorHandling,
  type GatewayConfig,
  type Infrastructure,
  type Logger,
  metricsRoute,
  type Registry,
  redisKeys,
  type ServingConfig,
  storedCopyCounter,
} from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import type postgres from 'postgres';
import { Admission } from './chat/admission.js';
import { chatRoutes } from './chat/chat-routes.js';
import { HOP_HEADER, isValidHop } from './chat/forward-to-owner.js';
import { PocWatch } from './chat/poc-watch.js';
import { authentication } from './gate/auth.js';
import { disabledMode } from './gate/disabled-mode.js';
import { KeyDirectory } from './gate/key-directory.js';
import { SettingsSource } from './gate/settings.js';
import { FleetModels } from './ownership/fleet-models.js';
import { PoolSnapshot } from './ownership/pool-snapshot.js';
import { createProxyOwnership } from './ownership/proxy-ownership.js';
import { activeRequests } from './plugins/active-requests.js';
import { lazyRequestLog } from './plugins/lazy-request-log.js';
import { createProxyMetrics } from './proxy-metrics.js';
import { controllerForward } from './routes/controller-forward.js';
import { healthRoutes } from './routes/health.js';
import { modelsRoute } from './routes/models.js';
import { statusRoute } from './routes/status.js';
import { Deadlines } from './serve/deadlines.js';
import { HedgeBudget } from './serve/hedge-budget.js';
import { HostHealth } from './serve/host-health.js';
import { followRealCosts } from './usage/budget-corrections.js';
import { UsageLedger } from './usage/usage-ledger.js';

/**
 * Knobs tests and benchmarks turn in-process; production uses the defaults. The four that an operator
 * may set (lease TTL, private hosts, idle flush, admission TTL) come from config.proxy (GATEWAY_*
 * variables, validated at start); a value here overrides the config for a test.
 */
export interface ProxyTuning {
  /** Escrow lease TTL (default: config.proxy.leaseTtlMs). */
  readonly leaseTtlMs?: number;
  /** Allow loopback/private host addresses (default: config.proxy.allowPrivateHosts). */
  readonly allowPrivateHosts?: boolean;
  /** Chat body limit in bytes (default 4 MiB). */
  readonly bodyLimit?: number;
  /** Overrides of config.proxy.serving (deadlines, hedge budget, quarantine; GATEWAY_* variables). */
  readonly serving?: Partial<ServingConfig>;
  /** Host-health sync with Redis (default 1 s; serve/host-health.ts). */
  readonly hostHealthSyncMs?: number;
  /** Pending host txs flushed after this long without a request (default: config.proxy.flushIdleMs). */
  readonly flushIdleMs?: number;
  readonly maintenanceEveryMs?: number;
  /** How long an admission entry outlives a replica that stopped refreshing it (default: config.proxy.admissionTtlMs). */
  readonly admissionTtlMs?: number;
  /** PoC phase re-read period with DEVSHARD_POC_REQUEST_MODE=off (default 2 s). */
  readonly pocCheckEveryMs?: number;
  /** Settings and keys: safety re-read period while subscribed to their changes (default 30 s; gate/settings.ts). */
  readonly settingsRefreshMs?: number;
  /** Usage rows get their final cost from the owned sessions this often (default 2 s). */
  readonly usageReconcileEveryMs?: number;
}

export interface ProxyDeps {
  config: GatewayConfig;
  infra: Pick<Infrastructure, 'database' | 'redis'>;
  registry: Registry;
  logger?: Logger;
  /** Where creator keys are read (default process.env). */
  env?: Readonly<Record<string, string | undefined>>;
  tuning?: ProxyTuning;
}

export async function buildProxyApp(deps: ProxyDeps): Promise<FastifyInstance> {
  const { config, infra } = deps;
  const tuning = deps.tuning ?? {};
  const bodyLimit = tuning.bodyLimit ?? 4 * 1024 * 1024;
  // Request ids are the usage ledger's primary key (usage_records.request_id), so they must be unique
  // across replicas and restarts and never chosen by a client (a reused id would drop the record of
  // a billed request): a random UUID, or the admitting replica's id on a valid forwarding hop.
  const app = createFastify(deps.logger, {
    bodyLimit,
    childLoggerFactory: lazyRequestLog,
    requestIdHeader: false,
    genReqId: (req) => {
      const presented = req.headers['x-request-id'];
      return typeof presented === 'string' &&
        isValidHop(config.adminKeyHash, presented, req.headers[HOP_HEADER])
        ? presented
        : randomUUID();
    },
  });
  const log = deps.logger;
  const onError = (what: string) => (error: Error) => app.log.warn({ err: error }, what);
  const keys = redisKeys(config.redis.keyPrefix);
  const serving = { ...config.proxy.serving, ...tuning.serving };
  const health = new HostHealth({
    redis: infra.redis,
    keys,
    config: serving,
    ...(tuning.hostHealthSyncMs !== undefined ? { syncEveryMs: tuning.hostHealthSyncMs } : {}),
    onError: (error) => app.log.warn({ err: error }, 'host health sync failed'),
    onTransition: (t) => {
      metrics.hostTransitions.inc({ state: t.to });
      // Markers host_quarantined / host_probation / host_healthy (docs/operator-guide.md §9).
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
  const metrics = createProxyMetrics(
    deps.registry,
    () => ownership.runtime.sessions.list(),
    () => health.snapshot(),
  );

  // A subscriber-only connection (settings and pool changes): no ready check (INFO is refused in
  // subscriber mode on reconnect).
  const subscriber = infra.redis.duplicate({ enableReadyCheck: false });
  subscriber.on('error', (error: Error) => app.log.warn({ error: error.message }, 'subscriber error'));
  const keyDirectory = new KeyDirectory({ database: infra.database });
  const settings = new SettingsSource({
    database: infra.database,
    keys: keyDirectory,
    config,
    subscriber,
    channel: keys.settingsChanges,
    ...(tuning.settingsRefreshMs !== undefined ? { refreshEveryMs: tuning.settingsRefreshMs } : {}),
    onError: onError('settings read failed'),
  });
  // Reads the public node could not answer, served from a stored copy (docs/operator-guide.md §9).
  const storedCopies = storedCopyCounter(deps.registry);
  const ownership = createProxyOwnership({
    config,
    sql: infra.database.sql as unknown as postgres.Sql,
    redis: infra.redis,
    env: deps.env ?? process.env,
    leaseTtlMs: tuning.leaseTtlMs ?? config.proxy.leaseTtlMs,
    allowPrivateHosts: tuning.allowPrivateHosts ?? config.proxy.allowPrivateHosts,
    flushIdleMs: tuning.flushIdleMs ?? config.proxy.flushIdleMs,
    ...(tuning.maintenanceEveryMs !== undefined ? { maintenanceEveryMs: tuning.maintenanceEveryMs } : {}),
    ...(log ? { log } : {}),
    onSessionEvent: metrics.onSessionEvent,
    onStoredCopy: () => storedCopies.inc({ what: 'participants' }),
    subscriber,
  });
  const sessions = ownership.runtime.sessions;
  const pool = new PoolSnapshot({
    redis: infra.redis,
    keys,
    directory: ownership.runtime.directory,
    subscriber,
    onError: onError('pool snapshot read failed'),
    onRead: (escrows) => keyDirectory.followPool(escrows.map((e) => e.escrowId)),
  });
  // The models Postgres says the fleet serves, for when the pool snapshot (Redis) misses one.
  const fleetModels = new FleetModels({
    sql: infra.database.sql as unknown as postgres.Sql,
    subscriber,
    channel: keys.poolChanges,
    onError: onError('fleet models read failed'),
  });
  const admission = new Admission({
    redis: infra.redis,
    keys,
    maxConcurrent: config.limits.maxConcurrentRequests,
    maxInputTokens: config.limits.maxInputTokensInFlight,
    entryTtlMs: tuning.admissionTtlMs ?? config.proxy.admissionTtlMs,
  });

  const usage = new UsageLedger({
    redis: infra.redis,
    keys,
    sql: infra.database.sql as unknown as postgres.Sql,
    replicaId: config.proxy.replicaId,
    sessions,
    ...(tuning.usageReconcileEveryMs !== undefined ? { reconcileEveryMs: tuning.usageReconcileEveryMs } : {}),
    onCorrections: (corrections) => followRealCosts(corrections, keyDirectory, admission),
    onError: onError('usage ledger'),
  });

  // Only `off` needs to know the phase (spec §2.10); `relaxed` serves through PoC.
  const poc =
    config.pocRequestMode === 'off'
      ? new PocWatch(chainClientFor(config), tuning.pocCheckEveryMs, onError('PoC phase read failed'), {
          redis: infra.redis,
          key: keys.chainPhase,
        })
      : undefined;

  app.addHook('onReady', async () => {
    await health.start();
    await settings.start();
    // Not awaited: readiness never waits on the public node (routes/health.ts). Until its first
    // reading lands the phase counts as not PoC (PocWatch's state before any reading).
    void poc?.start();
    await ownership.start();
    await pool.start();
    await fleetModels.start();
    await usage.start();
  });
  app.addHook('onClose', async () => {
    // After the server stopped taking requests and in-flight ones finished: hand every escrow back.
    await usage.stop();
    await ownership.close();
    pool.stop();
    fleetModels.stop();
    poc?.stop();
    admission.stop();
    await settings.stop();
    keyDirectory.stop();
    await health.stop();
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id);
    done(null, payload);
  });

  await app.register(errorHandling);
  await app.register(activeRequests);
  await app.register(authentication, {
    adminKeyHash: config.adminKeyHash,
    userKeyHashes: config.userKeyHashes,
    keys: keyDirectory,
  });
  await app.register(disabledMode, { settings });
  await app.register(metricsRoute, { registry: deps.registry });
  await app.register(healthRoutes, { infra, pool, settings });
  await app.register(statusRoute, { config, infra, pool, sessions, admission, versions: ownership.versions });
  await app.register(modelsRoute, { pool, settings });
  await app.register(chatRoutes, {
    sessions,
    pool,
    settings,
    keyDirectory,
    admission,
    metrics,
    redis: infra.redis,
    keys,
    replicaId: config.proxy.replicaId,
    hopSecret: config.adminKeyHash,
    bodyLimit,
    pocBlocks: () => poc?.active ?? false,
    capacityAware: config.capacityAwareLimits,
    fleetServes: (model) => fleetModels.has(model),
    serving: {
      health,
      deadlines: new Deadlines(serving),
      budget: new HedgeBudget({
        percent: serving.hedgeBudgetPercent,
        minPerMinute: serving.hedgeMinPerMinute,
      }),
      maxAttempts: serving.maxAttempts,
    },
  });
  await app.register(controllerForward, { controllerUrl: config.controller.url });
  return app;
}
