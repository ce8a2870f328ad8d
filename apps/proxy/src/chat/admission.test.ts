import { redisKeys } from '@gonka-gateway/shared';
import { createTestRedis, type TestRedis } from '@gonka-gateway/shared/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Admission, estimateInputTokens, type KeyAdmission } from './admission.js';

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

  describe("a stored key's own limits in the same script", () => {
    const key = (over: Partial<KeyAdmission> = {}): KeyAdmission => ({
      keyId: '7',
      rpm: 0,
      tpm: 0,
      tpmCharge: 10,
      maxConcurrent: 0,
      ...over,
    });

    it('rpm holds across replicas with the time until a request frees; others keys are not affected', async () => {
      const { a, b } = fleet('rpm', { maxConcurrent: 0, maxInputTokens: 0 });
      const first = await a.admit('r1', 1, key({ rpm: 2 }));
      expect(first).toMatchObject({ admitted: true, rate: { requestsLeft: 1 } });
      expect(await b.admit('r2', 1, key({ rpm: 2 }))).toMatchObject({
        admitted: true,
        rate: { requestsLeft: 0 },
      });
      await a.release('r1'); // a finished request still counts for the minute
      const refused = await b.admit('r3', 1, key({ rpm: 2 }));
      expect(refused).toMatchObject({ admitted: false, reason: 'rpm' });
      expect((refused as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(50_000);
      expect((await b.admit('r4', 1, key({ keyId: '8', rpm: 2 }))).admitted).toBe(true);
      a.stop();
      b.stop();
    });

    it('tpm counts input + max_tokens; a request larger than the limit can never fit', async () => {
      const { a, b } = fleet('tpm', { maxConcurrent: 0, maxInputTokens: 0 });
      expect((await a.admit('t1', 1, key({ tpm: 100, tpmCharge: 60 }))).admitted).toBe(true);
      expect(await b.admit('t2', 1, key({ tpm: 100, tpmCharge: 50 }))).toMatchObject({
        admitted: false,
        reason: 'tpm',
      });
      // The request used 20 tokens in the end: its entry shrinks and 50 more fit.
      await a.settle('t1', key(), 0n, 20);
      expect((await b.admit('t3', 1, key({ tpm: 100, tpmCharge: 50 }))).admitted).toBe(true);
      expect(await b.admit('t4', 1, key({ tpm: 100, tpmCharge: 101 }))).toMatchObject({
        reason: 'tpm',
        retryAfterMs: -1,
      });
      a.stop();
      b.stop();
    });

    it('a settle can also raise the tpm window: the tokens used exceed the admission charge', async () => {
      // ⌈bytes / 4⌉ undercounts text of 3-byte UTF-8 characters (about a token each), so a request
      // can use more tokens than it was charged. Its settle then narrows the window: why a settle is
      // sent when the request ends and never deferred (chat-routes.ts, closing commands).
      const { a, b } = fleet('tpm-raise', { maxConcurrent: 0, maxInputTokens: 0 });
      expect((await a.admit('u1', 1, key({ tpm: 100, tpmCharge: 60 }))).admitted).toBe(true);
      await a.settle('u1', key(), 0n, 90);
      // 60 + 20 would have fit before the settle; 90 + 20 does not.
      expect(await b.admit('u2', 1, key({ tpm: 100, tpmCharge: 20 }))).toMatchObject({
        admitted: false,
        reason: 'tpm',
      });
      expect((await b.admit('u3', 1, key({ tpm: 100, tpmCharge: 10 }))).admitted).toBe(true);
      a.stop();
      b.stop();
    });

    it('max_concurrent per key frees on release', async () => {
      const { a, b } = fleet('kconc', { maxConcurrent: 0, maxInputTokens: 0 });
      expect((await a.admit('c1', 1, key({ maxConcurrent: 1 }))).admitted).toBe(true);
      expect(await b.admit('c2', 1, key({ maxConcurrent: 1 }))).toMatchObject({ reason: 'key_concurrency' });
      await a.release('c1');
      expect((await b.admit('c3', 1, key({ maxConcurrent: 1 }))).admitted).toBe(true);
      a.stop();
      b.stop();
    });

    it('budget: spend + reservations + this reservation must fit; settle turns the reservation into the served cost', async () => {
      const { a, b, keys } = fleet('budget', { maxConcurrent: 0, maxInputTokens: 0 });
      const budget = (reservation: bigint) =>
        key({ budget: { limit: 1_000n, reservation, periodTag: 'total', seed: 300n, ttlSeconds: 0 } });
      // The counter is seeded from the ledger (300) when it does not exist yet.
      expect((await a.admit('m1', 1, budget(400n))).admitted).toBe(true);
      expect(await b.admit('m2', 1, budget(301n))).toMatchObject({
        admitted: false,
        reason: 'budget',
        spent: 300n,
        reserved: 400n,
      });
      await a.settle('m1', budget(400n), 250n, 5);
      expect(await redis.redis.get(keys.keySpend('7', 'total'))).toBe('550');
      expect((await b.admit('m3', 1, budget(450n))).admitted).toBe(true);
      expect(await a.admit('m4', 1, budget(1n))).toMatchObject({ reason: 'budget' });
      // The usage reconciler's correction (reservation → Finish) gives budget back.
      await a.adjustSpend('7', 'total', -100n);
      expect((await a.admit('m5', 1, budget(1n))).admitted).toBe(true);
      a.stop();
      b.stop();
    });

    it('an unsettled reservation of a replica that died expires with its entry', async () => {
      const { a, b } = fleet('budget-expiry', { maxConcurrent: 0, maxInputTokens: 0, entryTtlMs: 1_000 });
      const budget = key({
        budget: { limit: 100n, reservation: 80n, periodTag: 'total', seed: 0n, ttlSeconds: 0 },
      });
      expect((await b.admit('dead', 1, budget)).admitted).toBe(true);
      b.stop();
      expect(await a.admit('x', 1, budget)).toMatchObject({ reason: 'budget' });
      await expect
        .poll(async () => (await a.admit('y', 1, budget)).admitted, { timeout: 5_000, interval: 100 })
        .toBe(true);
      a.stop();
    });
  });
});
