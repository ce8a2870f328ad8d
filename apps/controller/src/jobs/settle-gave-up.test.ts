// The settle job's give-up signal that rotation relies on (upkeep/rotation-retire.ts): a settle that
// stopped on a rule violation (UnrecoverableError) reports its reason; one that may still succeed
// reports nothing. And the settle flow itself: the finalize child, then the settle parent, both
// keyed by the escrow id. Real BullMQ workers on the test Redis prefix.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ControllerHarness,
  createRegisteredEscrow,
  startControllerHarness,
} from '../testing/controller-harness.js';
import { JOB_IDS } from './queues.js';
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

  it('a settle is a flow keyed by the escrow: finalize child first, then the settle; enqueued twice it runs once', async () => {
    const id = await createRegisteredEscrow(app, h.chainId);
    const first = await jobs.enqueueSettle(id, 'CREATOR_KEY');
    expect(first).toBe(JOB_IDS.settle(id));
    expect(await jobs.enqueueSettle(id, 'CREATOR_KEY')).toBe(first);
    const end = await jobs.runSettle(id, 'CREATOR_KEY', { now: true });
    expect(end).toMatchObject({ kind: 'completed', txHash: expect.any(String) });
    const child = await jobs.finalize.getJob(JOB_IDS.finalize(id));
    const parent = await jobs.settle.getJob(JOB_IDS.settle(id));
    expect(child?.returnvalue).toEqual({ status: 'finalized' });
    expect(child?.finishedOn).toBeLessThanOrEqual(parent?.processedOn ?? 0);
    expect(child?.parentKey).toContain(JOB_IDS.settle(id));
    const committed =
      await h.sql`select 1 from chain_tx_commitments where kind = 'settle_escrow' and escrow_id = ${id.toString()}`;
    expect(committed).toHaveLength(1);

    // A finished flow is replaced by a fresh one, which finds the escrow settled and sends nothing.
    expect(await jobs.runSettle(id, 'CREATOR_KEY', { now: true })).toEqual({
      kind: 'completed',
      txHash: null,
    });
    expect((await jobs.finalize.getJob(JOB_IDS.finalize(id)))?.returnvalue).toEqual({ status: 'settled' });
    const again =
      await h.sql`select 1 from chain_tx_commitments where kind = 'settle_escrow' and escrow_id = ${id.toString()}`;
    expect(again).toHaveLength(1);
  }, 90_000);
});
