import { Redis, type RedisOptions } from 'ioredis';

/**
 * ioredis's own options for a REDIS_URL. `unix:///run/redis/redis.sock?db=N` is the server's Unix
 * socket, which costs the proxy less kernel time per command than TCP loopback (apps/proxy/README.md);
 * credentials need a host to parse as a URL, which is then ignored: `unix://:secret@localhost/run/…`.
 * ioredis itself takes a socket only as a bare path. Any other URL is ioredis's to read.
 */
export function redisTarget(url: string): string | RedisOptions {
  if (!url.startsWith('unix:')) return url;
  const parsed = new URL(url);
  const db = parsed.searchParams.get('db');
  return {
    path: decodeURIComponent(parsed.pathname),
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    ...(db ? { db: Number(db) } : {}),
  };
}

/**
 * An ioredis connection. `maxRetriesPerRequest: null` is what BullMQ workers require, and lets
 * commands wait through a Redis restart instead of failing after a few retries.
 */
export function openRedis(
  url: string,
  options: { name?: string; lazyConnect?: boolean; onError?: (err: Error) => void } = {},
): Redis {
  const own: RedisOptions = {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    connectionName: options.name ?? 'gonka-gateway',
    lazyConnect: options.lazyConnect ?? false,
  };
  const target = redisTarget(url);
  const redis = typeof target === 'string' ? new Redis(target, own) : new Redis({ ...target, ...own });
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
