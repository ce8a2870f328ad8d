// The pool snapshot follows owners' writes through `pool:changes`, not a short poll: with the safety
// period set far beyond the test, a change reaches the snapshot only if the announcement is read.
// An escrow it cannot route to yet is read at once, whatever the gap between announced reads; a
// first read that failed is retried every second (readiness waits for it).
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

  const ownedState = (escrowId: bigint) => ({
    escrowId,
    modelId: 'model-b',
    status: 'active' as const,
    capacityWeight: 4,
    balanceEstimate: 1_000n,
    nonce: 1n,
    owner: 'replica-b',
  });

  it('reads an escrow it cannot route to yet at once, however recent the last read', async () => {
    const keys = redisKeys(`${redis.prefix}new:`);
    const directory = new ReplicaDirectory({
      redis: redis.redis,
      keys,
      replicaId: 'replica-b',
      url: 'http://127.0.0.1:2',
      ttlMs: 60_000,
    });
    await directory.register();
    // Announced changes of routable escrows wait ten minutes: only the urgent path can read.
    const pool = new PoolSnapshot({
      redis: redis.redis,
      keys,
      directory,
      subscriber,
      refreshEveryMs: 600_000,
      changeGapMs: 600_000,
    });
    await pool.start();
    try {
      const publisher = new PoolPublisher(redis.redis, keys);
      for (const id of [21n, 22n]) {
        await redis.redis.set(keys.escrowLease(id), `replica-b:${id}`);
        // Claimed by its owner: announced, and read although a read has just been made.
        expect(await publisher.owned(ownedState(id), `replica-b:${id}`)).toBe(true);
        await expect
          .poll(() => pool.escrows.some((e) => e.escrowId === id && e.owner === 'replica-b'))
          .toBe(true);
      }
      expect(pool.models()).toEqual(new Set(['model-b']));
    } finally {
      pool.stop();
    }
  });

  it('is not loaded until a read succeeds, and retries a failed first read every second', async () => {
    const keys = redisKeys(`${redis.prefix}unreadable:`);
    const directory = new ReplicaDirectory({
      redis: redis.redis,
      keys,
      replicaId: 'replica-c',
      url: 'http://127.0.0.1:3',
      ttlMs: 60_000,
    });
    // The list of models is not a set: every read fails (WRONGTYPE).
    await redis.redis.set(keys.poolModels, 'not a set');
    const errors: Error[] = [];
    const pool = new PoolSnapshot({
      redis: redis.redis,
      keys,
      directory,
      refreshEveryMs: 600_000,
      onError: (error) => errors.push(error),
    });
    await pool.start();
    try {
      expect(pool.loaded).toBe(false);
      expect(errors[0]?.message).toMatch(/WRONGTYPE/);
      await redis.redis.del(keys.poolModels);
      await expect.poll(() => pool.loaded, { timeout: 5_000 }).toBe(true);
    } finally {
      pool.stop();
    }
  });
});
