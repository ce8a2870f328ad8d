// The Redis connection the ownership machinery uses (leases, pool state, directory, claim passes):
// every command fails after a bounded time instead of waiting for Redis to come back. The apps' shared
// connection (openRedis) retries without limit, which BullMQ needs; with it a claim pass, a lease
// renewal or stop() would hang for as long as Redis is down. A failed claim pass is retried by the
// next one, and the lease's local deadline decides ownership meanwhile (architecture §2.1).
import type { Redis } from 'ioredis';

/**
 * A new connection to the same Redis as `redis`, whose commands reject after `commandTimeoutMs`
 * (queued while disconnected included) and after one reconnect attempt. Close it with closeRedis.
 */
export function boundedRedis(
  redis: Redis,
  commandTimeoutMs: number,
  onError: (error: Error) => void = () => {},
): Redis {
  const bounded = redis.duplicate({
    commandTimeout: commandTimeoutMs,
    maxRetriesPerRequest: 1,
    connectionName: `${redis.options.connectionName ?? 'gonka-gateway'}-ownership`,
  });
  // ioredis reconnects by itself; without a listener each failed attempt is printed as "unhandled".
  bounded.on('error', onError);
  return bounded;
}
