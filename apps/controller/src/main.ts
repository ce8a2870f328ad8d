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
import { buildControllerApp } from './app.js';
import { bootstrapSettingsOnce, prepareDatabase } from './prepare-database.js';

runMain(async () => {
  const config = loadConfig();
  const logger = createLogger({ level: config.logLevel, name: 'controller', secrets: secretValues() });
  await prepareDatabase(config, logger);
  const infra = await openInfrastructure(config, 'controller', logger);
  await bootstrapSettingsOnce(infra.database.db, config, logger);
  const registry = createMetricsRegistry({ app: 'controller', version: GATEWAY_VERSION });
  const app = await buildControllerApp({ config, infra, registry, logger });
  installGracefulShutdown({ server: app, resources: [() => infra.close()], logger });
  await app.listen({ host: config.listenHost, port: config.controller.port });
  logger.info({ version: GATEWAY_VERSION }, 'controller ready');
});
