import { describe, expect, it } from 'vitest';
import { closeRedis, openRedis, redisTarget } from './client.js';

describe('redisTarget', () => {
  it('reads a unix: URL as the socket path, its database and credentials', () => {
    expect(redisTarget('unix://gw:s%40cret@localhost/run/redis/redis.sock?db=3')).toEqual({
      path: '/run/redis/redis.sock',
      username: 'gw',
      password: 's@cret',
      db: 3,
    });
    expect(redisTarget('unix:///tmp/r.sock')).toEqual({ path: '/tmp/r.sock' });
  });

  it('hands a redis: URL to ioredis as it is', () => {
    expect(redisTarget('redis://127.0.0.1:6379/2')).toBe('redis://127.0.0.1:6379/2');
  });

  it('keeps the connection options of openRedis on a socket', async () => {
    const redis = openRedis('unix:///tmp/absent.sock?db=1', { name: 'socket-test', lazyConnect: true });
    try {
      expect(redis.options).toMatchObject({
        path: '/tmp/absent.sock',
        db: 1,
        connectionName: 'socket-test',
        maxRetriesPerRequest: null,
        lazyConnect: true,
      });
    } finally {
      await closeRedis(redis);
    }
  });
});
