// A rotated-out escrow whose settle outlasts its stage (spec §3.4, /v1/debug/rotation counts): the
// regular escrow a bridge retires still has a request in flight when the next bridge starts, so it
// is on the first bridge's list and in the regular role the second one retires. It must be counted
// by the stage that retired it only; the full-stack rotation test saw `settled: 2` on a loaded
// machine. Proxies are simulated by the pool entries an owner publishes.
import { QWEN_MODEL } from '@gonka-gateway/devnet';
import { redisKeys } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminInject,
  type ControllerHarness,
  startControllerHarness,
} from '../testing/controller-harness.js';
import { type RotationDriver, rotationDriver, rotationSettings } from '../testing/rotation-driver.js';

const EPOCH = 400; // blocks
const PRE = 100;

describe('a retired escrow still settling when the next stage of its role starts', () => {
  let h: ControllerHarness;
  let app: FastifyInstance;
  let d: RotationDriver;
  beforeAll(async () => {
    h = await startControllerHarness({ epoch: { epochLength: EPOCH } });
    app = await h.build();
    d = rotationDriver(h, { epochLength: EPOCH });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  const inFlight = (id: bigint) => redisKeys(h.redis.prefix).escrowInFlight(id);
  const newest = async (role: string) =>
    (
      await h.sql<{ escrow_id: string }[]>`
        select escrow_id::text as escrow_id from escrows
         where role = ${role} and state = 'active' order by escrow_id desc limit 1`
    ).map((r) => BigInt(r.escrow_id))[0]!;
  const stage = async (name: string, epoch: number) =>
    (
      await h.sql<{ status: string; settled: number; retiring: string[] }[]>`
        select status, settled, retiring from rotation_stages
         where model_id = ${QWEN_MODEL} and stage = ${name} and epoch = ${epoch}`
    )[0];

  it('is counted by the stage that retired it, not again by the next one', async () => {
    const on = await adminInject(
      app,
      'POST',
      '/v1/admin/settings',
      rotationSettings(PRE, [{ modelId: QWEN_MODEL, privateKeyEnv: 'CREATOR_KEY' }]),
    );
    expect(on.statusCode, on.body).toBe(200);
    const first = d.epochNow();
    await d.tick(); // target stage: the first regular escrow
    const r1 = await newest('regular');
    await d.route(r1);
    await d.tick();

    // Bridge into first + 1: r1 is retired, but a request on it holds its settle.
    d.moveTo(first + 1, PRE - 10);
    await d.tick();
    await h.redis.redis.set(inFlight(r1), '1');
    await d.route(await newest('temp'));
    expect(await stage('bridge', first + 1)).toMatchObject({ status: 'retiring', retiring: [r1.toString()] });

    // Target of first + 1: a new regular escrow; the temporary one settles.
    d.moveTo(first + 1, -5);
    await d.tick();
    const r2 = await newest('regular');
    await d.route(r2);
    await d.tick();
    await d.tick();

    // Bridge into first + 2, r1 still settling: only r2 is this stage's to retire.
    d.moveTo(first + 2, PRE - 10);
    await d.tick();
    await d.route(await newest('temp'));
    await d.tick();
    expect((await stage('bridge', first + 2))!.retiring).not.toContain(r1.toString());
    expect(d.settled).toContain(r2);
    expect(d.settled).not.toContain(r1);

    await h.redis.redis.del(inFlight(r1));
    await d.tick();
    await d.tick();
    expect(d.settled.filter((id) => id === r1)).toEqual([r1]);
    expect(await stage('bridge', first + 1)).toMatchObject({ status: 'done', settled: 1, retiring: [] });
    expect(await stage('bridge', first + 2)).toMatchObject({ status: 'done', settled: 1, retiring: [] });
  }, 90_000);
});
