// A controller that loses and regains the leader lease runs its schedule workers on as many Redis
// connections each time, not a new set per leadership (BullMQ leaves a given connection open when
// its worker closes). Real BullMQ workers; the lease is taken away by writing another holder into
// its key, as a standby that won it would.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControllerContext } from '../controller-context.js';
import { type ControllerHarness, startControllerHarness } from '../testing/controller-harness.js';
import { type ControllerJobs, startControllerJobs } from './workers.js';

describe('leadership changes and the schedule workers’ connections', () => {
  let h: ControllerHarness;
  let ctx: ControllerContext;
  let jobs: ControllerJobs | undefined;
  beforeAll(async () => {
    h = await startControllerHarness();
    await h.build();
    ctx = { ...h.context(), controllerId: `controller-${randomUUID().slice(0, 8)}` };
  }, 60_000);
  afterAll(async () => {
    await jobs?.close();
    await h?.close();
  });

  /** This controller's BullMQ connections open on the server (other test files share it). */
  const open = async () =>
    String(await h.redis.redis.client('LIST'))
      .split('\n')
      .filter((line) => line.includes(` name=controller-bullmq:${ctx.controllerId} `)).length;

  it('keeps the same number of connections across three lose/regain cycles, and closes them all', async () => {
    jobs = await startControllerJobs(ctx, { redisUrl: h.redis.url, workers: true, leaderTtlMs: 600 });
    await expect.poll(() => jobs!.leading(), { timeout: 10_000 }).toBe(true);
    await expect.poll(open, { timeout: 10_000 }).toBeGreaterThan(0);
    const leading = await open();
    const leaderKey = ctx.keys.controllerLeader;
    for (let cycle = 0; cycle < 3; cycle++) {
      await h.redis.redis.set(leaderKey, 'controller-standby:0', 'PX', 60_000);
      await expect.poll(() => jobs!.leading(), { timeout: 10_000 }).toBe(false);
      await expect.poll(open, { timeout: 10_000 }).toBeLessThan(leading);
      await h.redis.redis.del(leaderKey);
      await expect.poll(() => jobs!.leading(), { timeout: 10_000 }).toBe(true);
      await expect.poll(open, { timeout: 10_000 }).toBe(leading);
    }
    await jobs.close();
    jobs = undefined;
    await expect.poll(open, { timeout: 10_000 }).toBe(0);
  }, 60_000);
});
