// The block time estimate against real Redis: none until enough blocks and time passed, then ms per
// block since the reference sample; the reference moves up every half window; a chain that went
// back starts over.
import { redisKeys } from '@gonka-gateway/shared';
import { createTestRedis, type TestRedis } from '@gonka-gateway/shared/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIN_SPAN_MS, readBlockTime, sampleBlockTime, WINDOW_MS } from './block-time.js';

let redis: TestRedis;
beforeAll(async () => {
  redis = await createTestRedis();
});
afterAll(async () => {
  await redis.cleanup();
});

describe('block time estimate', () => {
  const ctx = () => ({ redis: redis.redis, keys: redisKeys(redis.prefix) });

  it('needs 20 blocks and 10 s, then measures from the reference sample', async () => {
    const t0 = 1_000_000;
    expect(await sampleBlockTime(ctx(), 1_000n, t0)).toBeUndefined();
    expect(await sampleBlockTime(ctx(), 1_010n, t0 + MIN_SPAN_MS)).toBeUndefined(); // 10 blocks only
    expect(await sampleBlockTime(ctx(), 1_040n, t0 + 5_000)).toBeUndefined(); // 5 s only
    expect(await readBlockTime(ctx())).toBeUndefined();
    expect(await sampleBlockTime(ctx(), 1_040n, t0 + MIN_SPAN_MS)).toEqual({
      msPerBlock: 250,
      overBlocks: 40,
      overMs: 10_000,
    });
    expect((await readBlockTime(ctx()))?.msPerBlock).toBe(250);
  });

  it('follows a chain that slows down: the reference moves every half window', async () => {
    const half = WINDOW_MS / 2;
    let height = 1_000n;
    let at = 1_000_000;
    const run = (ms: number, msPerBlock: number) => {
      height += BigInt(ms / msPerBlock);
      at += ms;
      return sampleBlockTime(ctx(), height, at);
    };
    expect((await run(half, 250))?.msPerBlock).toBe(250);
    // The chain slows to 1 s a block: the estimate mixes both paces until the reference has moved past
    // the change, then it is the new pace alone.
    expect((await run(half, 1_000))?.msPerBlock).toBe(400);
    expect((await run(20_000, 1_000))?.msPerBlock).toBe(1_000);
  });

  it('starts over when the height goes back (a new chain)', async () => {
    expect(await sampleBlockTime(ctx(), 5n, 9_000_000)).toBeUndefined();
    expect(await readBlockTime(ctx())).toBeUndefined();
  });
});
