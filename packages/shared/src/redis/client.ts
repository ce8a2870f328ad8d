import { Redis } from 'ioredis';

/**
 * An ioredis connection. `maxRetriesPerRequest: null` is what BullMQ workers require, and lets
 * commands wait through a Redis restart instead of failing after a few retries.
 */
export function openRedis(
  url: string,
  options: { name?: string; lazyConnect?: boolean; onError?: (err: Error) => void } = {},
): Redis {
  const redis = new Redis(url, {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    connectionName: options.name ?? 'gonka-gateway',
    lazyConnect: options.lazyConnect ?? false,
  });
  // ioredis reconnects by itself; without a listener each failed attempt is printed as "unhandled".
  redis.on('error', options.onError ?? (() => {}));
  return redis;
}

/**
 * Closes a connection after pending replies and resolves once the socket is gone (quit's reply
 * arrives before that); never throws on an already-closed connection.
 */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'end') return;
  if (redis.status !== 'ready') {
    // Never connected or reconnecting: nothing to flush, and no 'end' may ever come.
    redis.disconnect();
    return;
  }
  const ended = new Promise<void>((resolve) => redis.once('end', () => resolve()));
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
  await ended;
}
