// One active controller (apps/controller/README.md, "One active controller") with two controller
// processes on one database and one private redis-server: only the holder of the leader lease runs
// the schedule workers, a standby takes the lead once the leader is SIGKILLed, and a Redis that
// comes back empty (FLUSHALL) gets its schedules registered again and its pool state rebuilt from
// Postgres (architecture §4).

import { QWEN_MODEL } from '@gonka-gateway/devnet';
import {
  insertEscrowRows,
  type PrivateRedis,
  startPrivateRedis,
} from '@gonka-gateway/escrow-runtime/testing';
import { closeRedis, decodePoolState, openRedis, redisKeys } from '@gonka-gateway/shared';
import { freePort } from '@gonka-gateway/shared/testing';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProcess } from '../support/gateway-process.js';
import { type Stack, startStack } from './stack.js';

interface Role {
  controller_id: string;
  leader: boolean;
}

describe('controller leader lease (two controller processes)', () => {
  let server: PrivateRedis;
  let s: Stack;
  let redis: ReturnType<typeof openRedis>;
  let queues: Queue[];
  let first: RunningProcess;
  let standbyUrl: string;

  beforeAll(async () => {
    server = await startPrivateRedis();
    s = await startStack({ proxies: 0, redisUrl: server.url });
    first = s.controller;
    redis = openRedis(server.url);
    queues = ['depletion-check', 'reconcile-commitments', 'settle'].map(
      (name) =>
        new Queue(name, { connection: openRedis(server.url), prefix: redisKeys(s.redis.prefix).bullPrefix }),
    );
  }, 120_000);
  afterAll(async () => {
    await Promise.all(queues?.map((q) => q.close()) ?? []);
    if (redis) await closeRedis(redis);
    await s?.close();
    await server?.stop();
  }, 60_000);

  const role = async (url: string): Promise<Role> =>
    (await (await fetch(`${url}/internal/health`, { signal: AbortSignal.timeout(5_000) })).json()) as Role;
  /** Controller ids with a worker on the queue (BullMQ lists named workers from CLIENT LIST). */
  const workersOn = async (queue: Queue) =>
    [...new Set((await queue.getWorkers()).map((w) => String(w.rawname).split(':w:')[1]))].sort();
  const depletion = () => queues[0]!;
  const reconcile = () => queues[1]!;
  const settle = () => queues[2]!;

  it('only the leader runs schedules; a standby takes the lead when the leader is killed', async () => {
    const leader = await role(s.controllerUrl);
    expect(leader.leader).toBe(true);
    const port = await freePort();
    standbyUrl = `http://127.0.0.1:${port}`;
    await s.startController({ port });
    const standby = await role(standbyUrl);
    expect(standby).toMatchObject({ leader: false });
    expect(standby.controller_id).not.toBe(leader.controller_id);

    // Schedule workers on the leader only; the on-demand settle worker on both.
    await expect.poll(() => workersOn(depletion()), { timeout: 10_000 }).toEqual([leader.controller_id]);
    expect(await workersOn(reconcile())).toEqual([leader.controller_id]);
    await expect
      .poll(() => workersOn(settle()), { timeout: 10_000 })
      .toEqual([leader.controller_id, standby.controller_id].sort());
    expect((await depletion().getJobSchedulers()).map((j) => j.key)).toEqual(['depletion-check-every']);
    const metrics = await (await fetch(`${standbyUrl}/metrics`)).text();
    expect(metrics).toMatch(/^devshard_gateway_controller_leader 0$/m);

    process.kill(first.child.pid!, 'SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    // Within about one lease TTL (1.5 s here) the standby leads and runs the schedules.
    await expect
      .poll(async () => (await role(standbyUrl)).leader, { timeout: 30_000, interval: 200 })
      .toBe(true);
    await expect
      .poll(() => workersOn(depletion()), { timeout: 15_000, interval: 200 })
      .toEqual([standby.controller_id]);
    // Its first act as leader: a reconcile pass, processed by itself.
    await expect
      .poll(
        async () =>
          (await reconcile().getCompleted()).some(
            (j) =>
              j.id?.startsWith(`reconcile-on-lead-${standby.controller_id}-`) &&
              j.processedBy === standby.controller_id,
          ),
        { timeout: 30_000, interval: 250 },
      )
      .toBe(true);
    expect(await (await fetch(`${standbyUrl}/metrics`)).text()).toMatch(
      /^devshard_gateway_controller_leader 1$/m,
    );
  }, 120_000);

  it('Redis emptied (FLUSHALL): the leader takes its lease again, re-registers schedules and rebuilds the pool from Postgres', async () => {
    const keys = redisKeys(s.redis.prefix);
    await insertEscrowRows(s.sql, [
      { escrowId: 901n, modelId: QWEN_MODEL, amount: 7_000_000n },
      { escrowId: 902n, modelId: QWEN_MODEL, amount: 7_000_000n, active: false },
      { escrowId: 903n, modelId: QWEN_MODEL, amount: 7_000_000n, state: 'draining' },
      { escrowId: 904n, modelId: QWEN_MODEL, amount: 7_000_000n, state: 'settled' },
    ]);
    // The only private redis-server of this test; the machine's shared Redis is never flushed.
    await redis.flushall();
    const pool = async () => {
      const out: Record<string, string | null> = {};
      for (const id of [901n, 902n, 903n, 904n]) {
        const entry = decodePoolState(await redis.hgetall(keys.poolEscrow(id)));
        out[id.toString()] = entry
          ? `${entry.status}/${entry.owner ?? 'unowned'}/${entry.balanceEstimate}`
          : null;
      }
      return out;
    };
    await expect.poll(pool, { timeout: 30_000, interval: 250 }).toEqual({
      '901': 'active/unowned/7000000',
      '902': 'inactive/unowned/7000000',
      '903': 'draining/unowned/7000000',
      '904': null,
    });
    expect((await redis.smembers(keys.poolModel(QWEN_MODEL))).sort()).toEqual(['901', '902', '903']);
    expect(await redis.smembers(keys.poolModels)).toEqual([QWEN_MODEL]);
    expect((await depletion().getJobSchedulers()).map((j) => j.key)).toEqual(['depletion-check-every']);
    expect((await reconcile().getJobSchedulers()).map((j) => j.key)).toEqual(['reconcile-commitments-every']);
    expect((await role(standbyUrl)).leader).toBe(true);
    expect(await redis.get(keys.controllerLeader)).toMatch(/^controller-[0-9a-f]{8}:0$/);
  }, 60_000);
});
