import {
  bootstrapSettings,
  ensureDatabaseExists,
  type GatewayConfig,
  type GatewayDb,
  type Logger,
  runMigrations,
} from '@gonka-gateway/shared';

/** Creates the database on a fresh server, applies migrations (advisory-locked), then bootstraps settings. */
export async function prepareDatabase(config: GatewayConfig, logger: Logger): Promise<void> {
  await ensureDatabaseExists(config.databaseUrl);
  await runMigrations(config.databaseUrl);
  logger.info('database migrations applied');
}

export async function bootstrapSettingsOnce(
  db: GatewayDb,
  config: GatewayConfig,
  logger: Logger,
): Promise<void> {
  if (await bootstrapSettings(db, config))
    logger.info('settings bootstrapped from the environment (first start)');
}
