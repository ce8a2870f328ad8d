import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { closeRedis, openRedis } from '../redis/client.js';
import { DEFAULT_TEST_REDIS_URL } from './test-services.js';

export interface TestRedis {
  url: string;
  /** A key prefix no other test file uses; pass it as REDIS_KEY_PREFIX / to redisKeys(). */
  prefix: string;
  redis: Redis;
  /** Deletes every key under the prefix and closes the connection. */
  cleanup(): Promise<void>;
}

export async function createTestRedis(): Promise<TestRedis> {
  const url = process.env.TEST_REDIS_URL || DEFAULT_TEST_REDIS_URL;
  const prefix = `gwtest:${Date.now().toString(36)}${randomBytes(4).toString('hex')}:`;
  const redis = openRedis(url, { name: 'gateway-test' });
  await redis.ping();
  return {
    url,
    prefix,
    redis,
    async cleanup() {
      await deleteKeysWithPrefix(redis, prefix);
      await closeRedis(redis);
    },
  };
}

export async function deleteKeysWithPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    if (keys.length > 0) await redis.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
}
