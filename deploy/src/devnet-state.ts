// The demo's database and Redis keys live exactly as long as its devnet. The devnet starts empty at
// every ./start, so escrows, sessions and leases kept from an earlier run name an escrow this chain
// does not have (or, the devnet being deterministic, a fresh escrow with the same id whose nonces the
// old session already spent). Unless the operator chose DATABASE_URL / REDIS_KEY_PREFIX, ./start
// uses its own database and prefix and empties both before the controller starts.
import { openDatabase, openRedis } from '@gonka-gateway/shared';

export const DEVNET_DATABASE = 'gonka_gateway_devnet';
export const DEVNET_REDIS_PREFIX = 'gw:devnet:';

/** Drops the demo database (the controller recreates and migrates it). */
export async function dropDevnetDatabase(databaseUrl: string): Promise<void> {
  const target = new URL(databaseUrl);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  const maintenance = new URL(databaseUrl);
  maintenance.pathname = '/postgres';
  const admin = openDatabase(maintenance.toString(), { max: 1, applicationName: 'gateway-start' });
  try {
    await admin.sql.unsafe(`drop database if exists "${name.replace(/"/g, '""')}" with (force)`);
  } finally {
    await admin.close();
  }
}

/** Deletes every key under the demo prefix (leases, pool, queues of the earlier run). */
export async function clearRedisPrefix(redisUrl: string, prefix: string): Promise<void> {
  const redis = openRedis(redisUrl, { name: 'gateway-start' });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
