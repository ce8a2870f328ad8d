import { runService } from '@gonka-gateway/shared';
import { buildControllerApp } from './app.js';
import { bootstrapSettingsOnce, prepareDatabase } from './prepare-database.js';

runService({
  name: 'controller',
  port: (config) => config.controller.port,
  beforeInfrastructure: prepareDatabase,
  build: async (deps) => {
    const firstStart = await bootstrapSettingsOnce(deps.infra.database.db, deps.config, deps.logger);
    return buildControllerApp({ ...deps, firstStart });
  },
});
