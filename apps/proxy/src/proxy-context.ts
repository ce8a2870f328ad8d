// What every component plugin of the proxy is built from (app.ts passes it to each): the validated
// configuration, Postgres and Redis, the Redis key names, the in-process tuning, the subscriber
// connection shared by every change feed, and the metrics.
import type { GatewayConfig, Infrastructure, Logger, RedisKeys, ServingConfig } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';
import type postgres from 'postgres';
import type { ProxyMetrics } from './proxy-metrics.js';

/**
 * Knobs tests and benchmarks turn in-process; production uses the defaults. The four that an operator
 * may set (lease TTL, private hosts, idle flush, admission TTL) come from config.proxy (GATEWAY_*
 * variables, validated at start); a value here overrides the config for a test.
 */
export interface ProxyTuning {
  /** Escrow lease TTL (default: config.proxy.leaseTtlMs). */
  readonly leaseTtlMs?: number;
  /** Allow loopback/private host addresses (default: config.proxy.allowPrivateHosts). */
  readonly allowPrivateHosts?: boolean;
  /** Chat body limit in bytes (default 4 MiB). */
  readonly bodyLimit?: number;
  /** Overrides of config.proxy.serving (deadlines, hedge budget, quarantine; GATEWAY_* variables). */
  readonly serving?: Partial<ServingConfig>;
  /** Host-health sync with Redis (default 1 s; serve/host-health.ts). */
  readonly hostHealthSyncMs?: number;
  /** Pending host txs flushed after this long without a request (default: config.proxy.flushIdleMs). */
  readonly flushIdleMs?: number;
  readonly maintenanceEveryMs?: number;
  /** How long an admission entry outlives a replica that stopped refreshing it (default: config.proxy.admissionTtlMs). */
  readonly admissionTtlMs?: number;
  /** PoC phase re-read period with DEVSHARD_POC_REQUEST_MODE=off (default 2 s). */
  readonly pocCheckEveryMs?: number;
  /** Settings and keys: safety re-read period while subscribed to their changes (default 30 s; gate/settings.ts). */
  readonly settingsRefreshMs?: number;
  /** Usage rows get their final cost from the owned sessions this often (default 2 s). */
  readonly usageReconcileEveryMs?: number;
}

export interface ProxyContext {
  readonly config: GatewayConfig;
  readonly infra: Pick<Infrastructure, 'database' | 'redis'>;
  readonly keys: RedisKeys;
  readonly tuning: ProxyTuning;
  /** A subscriber-only connection: settings, keys and pool changes. */
  readonly subscriber: Redis;
  readonly metrics: ProxyMetrics;
  readonly log?: Logger;
  /** Where creator keys are read. */
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** The database handle as postgres.js (the drizzle wrapper's client). */
export function plainSql(context: ProxyContext): postgres.Sql {
  return context.infra.database.sql as unknown as postgres.Sql;
}
