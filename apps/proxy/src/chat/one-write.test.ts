import { holdForTurn, inOneWrite, redisKeys } from '@gonka-gateway/shared';
import { createTestRedis, type TestRedis } from '@gonka-gateway/shared/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Admission } from './admission.js';
import { sendUsage } from './usage-events.js';

let redis: TestRedis;
beforeAll(async () => {
  redis = await createTestRedis();
});
afterAll(async () => {
  await redis.cleanup();
});

describe('inOneWrite (a chat request closing commands in one socket write)', () => {
  it('sends the release, the settle and the usage event as one write; each acts and answers as alone', async () => {
    const keys = redisKeys(`${redis.prefix}one-write:`);
    const admission = new Admission({ redis: redis.redis, keys, maxConcurrent: 1, maxInputTokens: 0 });
    const budget = {
      keyId: '9',
      rpm: 0,
      tpm: 0,
      tpmCharge: 10,
      maxConcurrent: 1,
      budget: { limit: 1_000n, reservation: 400n, periodTag: 'total', seed: 0n, ttlSeconds: 0 },
    };
    expect((await admission.admit('t1', 1, budget)).admitted).toBe(true);
    expect(await admission.admit('t2', 1, budget)).toMatchObject({ admitted: false });

    // Node's socket: one _writev for what was written while corked, _write for a lone write.
    type Write = (...args: unknown[]) => void;
    const socket = redis.redis.stream as unknown as { _write: Write; _writev: Write };
    const single = vi.spyOn(socket, '_write');
    const batched = vi.spyOn(socket, '_writev');
    let done: Promise<unknown>[] = [];
    inOneWrite(redis.redis, () => {
      done = [
        admission.release('t1'),
        admission.settle('t1', budget, 120n, 7),
        sendUsage(redis.redis, keys, {
          requestId: 'r1',
          keyId: 'key-9',
          model: 'm',
          escrowId: '1',
          nonces: [3n],
          inputTokens: 1,
          outputTokens: 6,
          status: 200,
          totalMs: 1,
          ttftMs: undefined,
          replicaId: 'a',
        }),
      ];
    });
    expect(single).not.toHaveBeenCalled();
    expect(batched).toHaveBeenCalledTimes(1);
    single.mockRestore();
    batched.mockRestore();
    await Promise.all(done);

    expect(await redis.redis.get(keys.keySpend('9', 'total'))).toBe('120');
    expect(await redis.redis.xlen(keys.usageStream)).toBe(1);
    expect((await admission.admit('t3', 1, budget)).admitted).toBe(true);
    admission.stop();
  });

  it("holdForTurn: concurrent requests' admissions leave in one write at the end of the turn", async () => {
    const keys = redisKeys(`${redis.prefix}turn-write:`);
    const admission = new Admission({ redis: redis.redis, keys, maxConcurrent: 2, maxInputTokens: 0 });
    type Write = (...args: unknown[]) => void;
    const socket = redis.redis.stream as unknown as { _write: Write; _writev: Write };
    const single = vi.spyOn(socket, '_write');
    const batched = vi.spyOn(socket, '_writev');
    // Three requests admitted in one turn (admit holds the connection for the turn itself).
    const outcomes = Promise.all(['a', 'b', 'c'].map((t) => admission.admit(t, 1)));
    expect(single).not.toHaveBeenCalled();
    expect(batched).not.toHaveBeenCalled();
    const answered = await outcomes;
    expect(single).not.toHaveBeenCalled();
    expect(batched).toHaveBeenCalledTimes(1);
    expect(answered.map((o) => o.admitted)).toEqual([true, true, false]);
    // The next turn's commands are held again, and a lone command leaves as one write.
    single.mockClear();
    batched.mockClear();
    holdForTurn(redis.redis);
    const released = admission.release('a');
    expect(single).not.toHaveBeenCalled();
    await released;
    expect(single).toHaveBeenCalledTimes(1);
    expect(batched).not.toHaveBeenCalled();
    single.mockRestore();
    batched.mockRestore();
    admission.stop();
  });
});
