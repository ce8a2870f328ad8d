import { Redis } from 'ioredis';

/**
 * An ioredis connection. `maxRetriesPerRequest: null` is what BullMQ workers require, and lets
 * commands wait through a Redis restart instead of failing after a few retries.
 */
export function openRedis(url: string, options: { name?: string; lazyConnect?: boolean } = {}): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    connectionName: options.name ?? 'gonka-gateway',
    lazyConnect: options.lazyConnect ?? false,
  });
}

/** Closes a connection, waiting for pending replies; never throws on an already-closed one. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'end') return;
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}
