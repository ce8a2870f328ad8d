// The data-plane app (architecture §1, §5), its folders in the order a request meets them: gate/
// (who is calling, disabled mode, settings), chat/ (policy, admission, routing, serving), ownership/
// (the escrows this replica owns and the fleet's pool), routes/ (status, models, health, controller).
// Every dependency is passed in; a test builds the app with real Postgres/Redis in a few lines.

import { randomUUID } from 'node:crypto';
import {
  createFastify,
  errorHandling,
  type GatewayConfig,
  type Infrastructure,
  type Logger,
  metricsRoute,
  type Registry,
  redisKeys,
} from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import { admissionState } from './chat/admission-state.js';
import { chatRoutes } from './chat/chat-routes.js';
import { HOP_HEADER, isValidHop } from './chat/forward-to-owner.js';
import { authentication } from './gate/auth.js';
import { disabledMode } from './gate/disabled-mode.js';
import { gateState } from './gate/gate-state.js';
import { ownershipState } from './ownership/ownership-state.js';
import { activeRequests } from './plugins/active-requests.js';
import { lazyRequestLog } from './plugins/lazy-request-log.js';
import type { ProxyContext, ProxyTuning } from './proxy-context.js';
import { createProxyMetrics } from './proxy-metrics.js';
import { controllerForward } from './routes/controller-forward.js';
import { healthRoutes } from './routes/health.js';
import { modelsRoute } from './routes/models.js';
import { statusRoute } from './routes/status.js';
import { servingState } from './serve/serving-state.js';
import { usageState } from './usage/usage-state.js';

export type { ProxyTuning } from './proxy-context.js';

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
  // A subscriber-only connection (settings and pool changes): no ready check (INFO is refused in
  // subscriber mode on reconnect).
  const subscriber = infra.redis.duplicate({ enableReadyCheck: false });
  subscriber.on('error', (error: Error) => app.log.warn({ error: error.message }, 'subscriber error'));
  const context: ProxyContext = {
    config,
    infra,
    keys: redisKeys(config.redis.keyPrefix),
    tuning,
    subscriber,
    metrics: createProxyMetrics(
      deps.registry,
      () => app.owned.ownership.runtime.sessions.list(),
      () => app.serving.health.snapshot(),
    ),
    ...(deps.logger ? { log: deps.logger } : {}),
    env: deps.env ?? process.env,
  };

  // Components: each starts when the app is ready and stops, in reverse order, when it closes.
  await app.register(servingState, context);
  await app.register(gateState, context);
  await app.register(admissionState, context);
  await app.register(ownershipState, { ...context, registry: deps.registry });
  await app.register(usageState, context);

  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id);
    done(null, payload);
  });
  const { keyDirectory, settings } = app.gate;
  const { ownership, pool, fleetModels } = app.owned;
  const { admission, poc } = app.admitting;
  const sessions = ownership.runtime.sessions;
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
    metrics: context.metrics,
    redis: infra.redis,
    keys: context.keys,
    replicaId: config.proxy.replicaId,
    hopSecret: config.adminKeyHash,
    bodyLimit,
    pocBlocks: () => poc?.active ?? false,
    capacityAware: config.capacityAwareLimits,
    fleetServes: (model) => fleetModels.has(model),
    serving: app.serving,
  });
  await app.register(controllerForward, { controllerUrl: config.controller.url });
  return app;
}
