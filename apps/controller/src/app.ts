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
import { healthRoute } from './routes/health.js';

export interface ControllerDeps {
  config: GatewayConfig;
  infra: Pick<Infrastructure, 'database' | 'redis'>;
  registry: Registry;
  logger?: Logger;
}

/** The control-plane app (architecture.md §1): admin API and job workers hang off this. */
export async function buildControllerApp(deps: ControllerDeps): Promise<FastifyInstance> {
  const app = createFastify(deps.logger);
  await app.register(errorHandling);
  await app.register(metricsRoute, { registry: deps.registry });
  await app.register(healthRoute, { infra: deps.infra });
  return app;
}
