// The PoC gate's source: the controller's published phase in Redis when present; without it the
// node is asked (here unreachable: the last known state is kept and the error reported).
import { createChainClient } from '@gonka-gateway/chain';
import { redisKeys } from '@gonka-gateway/shared';
import { createTestRedis, freePort, type TestRedis } from '@gonka-gateway/shared/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PocWatch } from './poc-watch.js';

describe('PocWatch', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await createTestRedis();
  });
  afterAll(async () => {
    await redis?.cleanup();
  });

  it("follows the controller's published copy while it exists, and falls back to the node once it is gone", async () => {
    const key = redisKeys(redis.prefix).chainPhase;
    const closed = `http://127.0.0.1:${await freePort()}`;
    const errors: Error[] = [];
    const watch = new PocWatch(
      createChainClient({ chainRest: closed, publicApi: closed }),
      60_000,
      (e) => errors.push(e),
      { redis: redis.redis, key },
    );
    await redis.redis.hset(key, { poc_active: '1', epoch: '3', phase: 'PoCGenerate' });
    await watch.refresh();
    expect([watch.active, errors.length]).toEqual([true, 0]);
    await redis.redis.hset(key, { poc_active: '0', phase: 'Inference' });
    await watch.refresh();
    expect([watch.active, errors.length]).toEqual([false, 0]);
    await redis.redis.hset(key, { poc_active: '1' });
    await watch.refresh();
    await redis.redis.del(key); // expired (no controller): the node is asked
    await watch.refresh();
    expect(watch.active).toBe(true); // unreachable node: the last known state stays
    expect(errors.length).toBe(1);
    watch.stop();
  });
});
