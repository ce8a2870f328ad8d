import {
  createFastify,
  errorHandling,
  type GatewayConfig,
  type Infrastructure,
  type Logger,
  metricsRoute,
  type Registry,
} from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import { activeRequests } from './plugins/active-requests.js';
import { statusRoute } from './routes/status.js';

export interface ProxyDeps {
  config: GatewayConfig;
  infra: Pick<Infrastructure, 'database' | 'redis'>;
  registry: Registry;
  logger?: Logger;
}

/** The data-plane app (architecture.md §1). Tests build it with real Postgres/Redis in a few lines. */
export async function buildProxyApp(deps: ProxyDeps): Promise<FastifyInstance> {
  const app = createFastify(deps.logger);
  await app.register(errorHandling);
  await app.register(activeRequests);
  await app.register(metricsRoute, { registry: deps.registry });
  await app.register(statusRoute, { config: deps.config, infra: deps.infra });
  return app;
}
