import { redisKeys } from '@gonka-gateway/shared';
import { createTestRedis, type TestRedis } from '@gonka-gateway/shared/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Admission, estimateInputTokens } from './admission.js';

let redis: TestRedis;
const extra: { quit(): Promise<unknown> }[] = [];
beforeAll(async () => {
  redis = await createTestRedis();
});
afterAll(async () => {
  await Promise.all(extra.map((c) => c.quit()));
  await redis.cleanup();
});

/** Two replicas' admission on one Redis prefix (one fleet). */
function fleet(
  prefix: string,
  limits: { maxConcurrent: number; maxInputTokens: number; entryTtlMs?: number },
) {
  const keys = redisKeys(`${redis.prefix}${prefix}:`);
  const a = new Admission({ redis: redis.redis, keys, ...limits });
  const other = redis.redis.duplicate();
  extra.push(other);
  const b = new Admission({ redis: other, keys, ...limits });
  return { a, b, keys };
}

describe('fleet-wide admission (one Lua script per request)', () => {
  it('estimates input tokens as ⌈bytes / 4⌉', () => {
    expect([0, 1, 4, 5, 4096].map(estimateInputTokens)).toEqual([0, 1, 1, 2, 1024]);
  });

  it('holds the concurrency limit across replicas and frees a slot on release', async () => {
    const { a, b } = fleet('conc', { maxConcurrent: 2, maxInputTokens: 0 });
    expect((await a.admit('a1', 10)).admitted).toBe(true);
    expect((await b.admit('b1', 10)).admitted).toBe(true);
    expect(await a.admit('a2', 10)).toEqual({ admitted: false, reason: 'concurrency' });
    expect(await b.admit('b2', 10)).toEqual({ admitted: false, reason: 'concurrency' });
    await a.release('a1');
    expect((await b.admit('b2', 10)).admitted).toBe(true);
    expect(await a.inFlight()).toBe(2);
    a.stop();
    b.stop();
  });

  it('holds the input-token limit across replicas; a lone request larger than the limit still runs', async () => {
    const { a, b } = fleet('tokens', { maxConcurrent: 0, maxInputTokens: 100 });
    expect((await a.admit('a1', 60)).admitted).toBe(true);
    expect(await b.admit('b1', 41)).toEqual({ admitted: false, reason: 'input_tokens' });
    expect((await b.admit('b2', 40)).admitted).toBe(true);
    await a.release('a1');
    await b.release('b2');
    expect((await a.admit('big', 500)).admitted).toBe(true);
    a.stop();
    b.stop();
  });

  it("a replica that dies: its entries expire on their own, a live replica's are kept", async () => {
    const { a, b, keys } = fleet('expiry', { maxConcurrent: 2, maxInputTokens: 0, entryTtlMs: 1_000 });
    expect((await a.admit('live', 1)).admitted).toBe(true);
    expect((await b.admit('dead', 1)).admitted).toBe(true);
    b.stop(); // b stops refreshing: as if its process died
    expect(await a.admit('x', 1)).toEqual({ admitted: false, reason: 'concurrency' });
    await expect
      .poll(async () => (await a.admit('y', 1)).admitted, { timeout: 5_000, interval: 100 })
      .toBe(true);
    // a kept its entry alive (refreshed every TTL/3); b's expired and its tokens went with it.
    expect(await redis.redis.zscore(keys.admissionRequests, 'live')).not.toBeNull();
    expect(await redis.redis.hexists(keys.admissionTokens, 'dead')).toBe(0);
    a.stop();
  });
});
