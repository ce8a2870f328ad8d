// The pool snapshot follows owners' writes through `pool:changes`, not a short poll: with the safety
// period set far beyond the test, a change reaches the snapshot only if the announcement is read.
import { once } from 'node:events';
import { PoolPublisher, ReplicaDirectory } from '@gonka-gateway/escrow-runtime';
import { closeRedis, redisKeys } from '@gonka-gateway/shared';
import { createTestRedis, type TestRedis } from '@gonka-gateway/shared/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PoolSnapshot } from './pool-snapshot.js';

describe('PoolSnapshot', () => {
  let redis: TestRedis;
  let subscriber: Redis;
  beforeAll(async () => {
    redis = await createTestRedis();
    subscriber = redis.redis.duplicate({ enableReadyCheck: false });
  });
  afterAll(async () => {
    await closeRedis(subscriber);
    await redis.cleanup();
  });

  it('re-reads the pool when an owner announces a change, and stops following it once stopped', async () => {
    const keys = redisKeys(redis.prefix);
    const directory = new ReplicaDirectory({
      redis: redis.redis,
      keys,
      replicaId: 'replica-a',
      url: 'http://127.0.0.1:1',
      ttlMs: 60_000,
    });
    const errors: Error[] = [];
    const pool = new PoolSnapshot({
      redis: redis.redis,
      keys,
      directory,
      subscriber,
      refreshEveryMs: 600_000,
      changeGapMs: 0,
      onError: (error) => errors.push(error),
    });
    await pool.start();
    try {
      expect(pool.escrows).toEqual([]);
      await directory.register();
      const lease = 'replica-a:1';
      await redis.redis.set(keys.escrowLease(7n), lease);
      const publisher = new PoolPublisher(redis.redis, keys);
      const state = {
        escrowId: 7n,
        modelId: 'model-a',
        status: 'active' as const,
        capacityWeight: 4,
        balanceEstimate: 1_000n,
        nonce: 3n,
        owner: 'replica-a',
      };
      expect(await publisher.owned(state, lease)).toBe(true);
      await expect.poll(() => pool.escrows.map((e) => e.nonce)).toEqual([3n]);
      // The replicas are read with the pool: a forward finds the new owner's URL.
      expect(pool.replicaUrl('replica-a')).toBe('http://127.0.0.1:1');

      expect(await publisher.update(7n, 'model-a', lease, { nonce: 4n })).toBe(true);
      await expect.poll(() => pool.escrows.map((e) => e.nonce)).toEqual([4n]);

      // A change made while the subscriber was away is never announced to it: it is read on the way back.
      const away = once(subscriber, 'end');
      subscriber.disconnect();
      await away;
      await redis.redis.hset(keys.poolEscrow(7n), 'nonce', '9');
      await subscriber.connect();
      await expect.poll(() => pool.escrows.map((e) => e.nonce)).toEqual([9n]);
      // And announcements reach it again.
      expect(await publisher.update(7n, 'model-a', lease, { nonce: 10n })).toBe(true);
      await expect.poll(() => pool.escrows.map((e) => e.nonce)).toEqual([10n]);
      expect(errors).toEqual([]);
    } finally {
      pool.stop();
    }
    expect(subscriber.listenerCount('message') + subscriber.listenerCount('ready')).toBe(0);
  });
});
