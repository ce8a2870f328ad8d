import type { FastifyInstance } from 'fastify';
import { type GatewayConfig, loadConfig, secretValues } from '../config/load-config.js';
import { createLogger, type Logger } from '../logger.js';
import { createMetricsRegistry, type Registry } from '../metrics.js';
import { installGracefulShutdown } from './graceful-shutdown.js';
import { type Infrastructure, openInfrastructure } from './infrastructure.js';
import { runMain } from './run-main.js';
import { GATEWAY_VERSION } from './version.js';

export interface ServiceDeps {
  config: GatewayConfig;
  infra: Infrastructure;
  registry: Registry;
  logger: Logger;
}

export interface ServiceSpec {
  /** `proxy` or `controller`: names the logger, metrics and database connections. */
  name: string;
  port(config: GatewayConfig): number;
  /** Runs before Postgres and Redis are opened (the controller creates and migrates its database). */
  beforeInfrastructure?(config: GatewayConfig, logger: Logger): Promise<void>;
  build(deps: ServiceDeps): Promise<FastifyInstance>;
}

/**
 * The start-up every gateway process shares: configuration (one-line exit on error), a redacting
 * logger, Postgres and Redis checked, the app built and listening, and SIGTERM draining in-flight
 * requests before the pools close.
 */
export function runService(spec: ServiceSpec): void {
  runMain(async () => {
    const config = loadConfig();
    const logger = createLogger({ level: config.logLevel, name: spec.name, secrets: secretValues() });
    await spec.beforeInfrastructure?.(config, logger);
    const infra = await openInfrastructure(config, spec.name, logger);
    const registry = createMetricsRegistry({ app: spec.name, version: GATEWAY_VERSION });
    const app = await spec.build({ config, infra, registry, logger });
    installGracefulShutdown({ server: app, resources: [() => infra.close()], logger });
    await app.listen({ host: config.listenHost, port: spec.port(config) });
    logger.info({ version: GATEWAY_VERSION }, `${spec.name} ready`);
  });
}
