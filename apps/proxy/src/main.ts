import {
  createLogger,
  createMetricsRegistry,
  GATEWAY_VERSION,
  installGracefulShutdown,
  loadConfig,
  openInfrastructure,
  runMain,
  secretValues,
} from '@gonka-gateway/shared';
import { buildProxyApp } from './app.js';

runMain(async () => {
  const config = loadConfig();
  const logger = createLogger({ level: config.logLevel, name: 'proxy', secrets: secretValues() });
  const infra = await openInfrastructure(config, `proxy-${config.proxy.replicaId}`, logger);
  const registry = createMetricsRegistry({ app: 'proxy', version: GATEWAY_VERSION });
  const app = await buildProxyApp({ config, infra, registry, logger });
  installGracefulShutdown({ server: app, resources: [() => infra.close()], logger });
  await app.listen({ host: config.listenHost, port: config.proxy.port });
  logger.info({ replica: config.proxy.replicaId, version: GATEWAY_VERSION }, 'proxy ready');
});
