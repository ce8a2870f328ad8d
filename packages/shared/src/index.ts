// Public surface of @gonka-gateway/shared.

export {
  DEFAULT_PASSTHROUGH,
  MAX_PASSTHROUGH_PARAMETERS,
  PARAMETER_NAME,
  RULED_CHAT_PARAMETERS,
} from './chat-parameters.js';
export {
  hashApiKey,
  matchesDigest,
  matchesKeyHash,
  parseAdminKey,
  parseUserKeys,
} from './config/api-keys.js';
export { chainClientFor } from './config/chain-client.js';
export { configurationTable } from './config/config-table.js';
export {
  ConfigError,
  type EscrowMode,
  type GatewayConfig,
  loadConfig,
  type ServingConfig,
  secretValues,
} from './config/load-config.js';
export type { PreregisteredEscrow } from './config/preregistered-escrows.js';
export {
  LOG_LEVELS,
  POC_REQUEST_MODES,
  type PocRequestMode,
  VARIABLES,
  type VariableName,
  type VariableSpec,
} from './config/variables.js';
export {
  type Database,
  ensureDatabaseExists,
  type GatewayDb,
  openDatabase,
  openPlainPool,
  sqlState,
} from './db/client.js';
export * as escrowTable from './db/escrow-table.js';
export { MIGRATIONS_FOLDER, runMigrations } from './db/migrate.js';
export * as schema from './db/schema.js';
export { bootstrapSettings, DEFAULT_ESCROW_ROTATION, readSettings } from './db/settings.js';
export {
  ERROR_TABLE,
  type ErrorCode,
  GatewayError,
  type OpenAIErrorBody,
  openAIErrorSchema,
  toErrorResponse,
} from './errors.js';
export { errorHandling } from './http/error-handling.js';
export { metricsRoute } from './http/metrics-route.js';
export { createFastify } from './http/server-options.js';
export { createLogger, type Logger, type LoggerOptions } from './logger.js';
export {
  createMetricsRegistry,
  METRIC_PREFIX,
  type Registry,
  type StoredCopyRead,
  storedCopyCounter,
} from './metrics.js';
export { closeRedis, openRedis } from './redis/client.js';
export { ESCROW_CUT_TTL_MS, escrowCutOrder, orderEscrowCut, SETTLE_FORCED_CUT } from './redis/escrow-cut.js';
export {
  decodeHostHealth,
  HOST_COUNTERS,
  HOST_HEALTH_STATES,
  type HostCounter,
  type HostHealthRecord,
  type HostHealthSettable,
  type HostHealthState,
  type HostHealthUpdate,
  hostHealthMember,
  liftQuarantine,
  readHostHealth,
  writeHostHealth,
} from './redis/host-health.js';
export { type RedisKeys, redisKeys } from './redis/keys.js';
export { nonceRoutingStop, ROUTING_MARGIN, UNKNOWN_CEILING_ROUTING_STOP } from './redis/nonce-routing.js';
export { holdForTurn, inOneWrite } from './redis/one-write.js';
export {
  DEPLETION_THRESHOLD,
  decodePoolState,
  encodePoolState,
  POOL_STATUSES,
  type PoolEscrowState,
  PoolStateCodecError,
  type PoolStatus,
} from './redis/pool-state.js';
export {
  type ClosedWindowEscrow,
  readSettleWindowSummary,
  type SettleWindowSummary,
  summarizeClosedWindows,
  writeSettleWindowSummary,
} from './redis/settle-window-summary.js';
export { adjustSpendCounter } from './redis/spend-counter.js';
export { openSecret, SecretBoxError, sealSecret } from './secrets/secret-box.js';
export { type Closable, installGracefulShutdown, type ShutdownOptions } from './service/graceful-shutdown.js';
export {
  checkInfrastructure,
  describeEndpoint,
  type Infrastructure,
  InfrastructureError,
  openInfrastructure,
} from './service/infrastructure.js';
export { EXIT_CONFIG, EXIT_UNAVAILABLE, runMain } from './service/run-main.js';
export { runService, type ServiceDeps, type ServiceSpec } from './service/run-service.js';
export { GATEWAY_VERSION } from './service/version.js';
export {
  BUDGET_PERIODS,
  type BudgetPeriod,
  budgetPeriodOf,
  type PeriodWindow,
} from './usage/budget-period.js';
