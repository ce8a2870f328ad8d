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

/** Writes the settings row on the first start; true when this start did (spec §2.6, §2.10). */
export async function bootstrapSettingsOnce(
  db: GatewayDb,
  config: GatewayConfig,
  logger: Logger,
): Promise<boolean> {
  const first = await bootstrapSettings(db, config);
  if (first) logger.info('settings bootstrapped from the environment (first start)');
  return first;
}
