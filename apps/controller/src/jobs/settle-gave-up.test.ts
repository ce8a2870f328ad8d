// The settle job's give-up signal that rotation relies on (upkeep/rotation-retire.ts): a settle that
// stopped on a rule violation (UnrecoverableError) reports its reason; one that may still succeed
// reports nothing. Real BullMQ workers on the test Redis prefix.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ControllerHarness,
  createRegisteredEscrow,
  startControllerHarness,
} from '../testing/controller-harness.js';
import { type ControllerJobs, startControllerJobs } from './workers.js';

describe('settle job give-up', () => {
  let h: ControllerHarness;
  let app: FastifyInstance;
  let jobs: ControllerJobs;
  beforeAll(async () => {
    h = await startControllerHarness();
    app = await h.build();
    jobs = await startControllerJobs(h.context(), {
      redisUrl: h.redis.url,
      workers: true,
      leaderTtlMs: 10_000,
    });
  }, 60_000);
  afterAll(async () => {
    await jobs?.close();
    await h?.close();
  });

  it('a settle with a key that is not the creator gives up at once and says why; an unknown escrow id has no job', async () => {
    const id = await createRegisteredEscrow(app, h.chainId);
    expect(await jobs.settleGaveUp(id)).toBeUndefined();
    await jobs.enqueueSettle(id, 'OUTSIDER_KEY');
    await expect
      .poll(() => jobs.settleGaveUp(id), { timeout: 20_000, interval: 100 })
      .toMatch(/the settler must be the creator/);
    expect(await jobs.settleGaveUp(id + 1000n)).toBeUndefined();
  }, 60_000);
});
