// waitUntilServing against real Redis: it answers once an owner has published the escrow active with
// itself as owner, at once on a fault, and with false (never an exception) when its bound passes,
// Redis answering or not. The whole path (register → proxies claim → answer) is tests/stack/serving.test.ts.
import { PoolPublisher } from '@gonka-gateway/escrow-runtime';
import { closeRedis, openRedis, redisKeys } from '@gonka-gateway/shared';
import { createTestRedis, freePort, type TestRedis } from '@gonka-gateway/shared/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntilServing } from './serving.js';

let redis: TestRedis;
beforeAll(async () => {
  redis = await createTestRedis();
});
afterAll(async () => {
  await redis.cleanup();
});

const state = (escrowId: bigint) => ({
  escrowId,
  modelId: 'model-a',
  status: 'active' as const,
  capacityWeight: 4,
  balanceEstimate: 1_000n,
  nonce: 0n,
  owner: 'replica-a',
});

describe('waitUntilServing', () => {
  const ctx = () => ({ redis: redis.redis, keys: redisKeys(redis.prefix) });

  it('answers true once an owner publishes the escrow, however long the bound', async () => {
    const { keys } = ctx();
    const waiting = waitUntilServing(ctx(), 1n, 600_000);
    // Registered, unowned (the controller's pool rebuild writes such an entry): not serving yet.
    await redis.redis.hset(keys.poolEscrow(1n), { status: 'active', owner: '' });
    await redis.redis.set(keys.escrowLease(1n), 'replica-a:1');
    expect(await new PoolPublisher(redis.redis, keys).owned(state(1n), 'replica-a:1')).toBe(true);
    expect(await waiting).toBe(true);
  });

  it('answers false at once when the escrow faulted', async () => {
    const { keys } = ctx();
    await redis.redis.hset(keys.poolEscrow(2n), { status: 'faulted', owner: '' });
    expect(await waitUntilServing(ctx(), 2n, 600_000)).toBe(false);
  });

  it('answers false when nobody serves it within the bound, and when Redis does not answer', async () => {
    expect(await waitUntilServing(ctx(), 3n, 300)).toBe(false);
    const nowhere = openRedis(`redis://127.0.0.1:${await freePort()}`, { name: 'serving-test' });
    try {
      expect(await waitUntilServing({ redis: nowhere, keys: ctx().keys }, 3n, 300)).toBe(false);
    } finally {
      await closeRedis(nowhere);
    }
  });
});
