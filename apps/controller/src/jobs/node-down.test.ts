// A controller started while the public node and the chain REST answer 503 (devnet faults) and Redis
// lost the gateway's keys: it takes the lead and rebuilds the pool from Postgres, serves its admin
// routes, republishes the last known chain phase (marked stale) for the proxies' PoC gate, backs off
// the node-bound passes instead of failing a job per tick, and publishes fresh readings again once the
// node answers (docs/operator-guide.md "When the public node is down").
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControllerContext } from '../controller-context.js';
import {
  adminInject,
  type ControllerHarness,
  createRegisteredEscrow,
  startControllerHarness,
} from '../testing/controller-harness.js';
import { QUEUE_NAMES } from './queues.js';

describe('the controller while the public node and the chain REST are down', () => {
  let h: ControllerHarness;
  let ctx: ControllerContext;
  beforeAll(async () => {
    h = await startControllerHarness();
    ctx = h.context();
  });
  afterAll(async () => {
    h?.devnet.faults.clear();
    await h?.close();
  });

  const fast = { GATEWAY_ROTATION_TICK_MS: '600' };

  it('leads, rebuilds the pool, serves admin routes, republishes the last known phase, and recovers', async () => {
    const first = await h.build({ jobs: true, config: fast });
    const id = await createRegisteredEscrow(first, h.chainId);
    const redis = h.redis.redis;
    const phaseKey = ctx.keys.chainPhase;
    // A reading from the node: published to Redis and kept in Postgres as the last known one.
    await expect.poll(() => redis.hget(phaseKey, 'epoch'), { timeout: 15_000 }).not.toBeNull();
    await expect
      .poll(async () => (await h.sql`select name from last_known_reads where name = 'chain_phase'`).length)
      .toBe(1);
    await first.close();

    // Everything of the gateway's in Redis is gone, and the node and the chain REST answer 503.
    const ours = await redis.keys(`${h.redis.prefix}*`);
    if (ours.length > 0) await redis.del(...ours);
    h.devnet.faults.set({ nodeQuery: { status: 503 }, chainQuery: { status: 503 } });

    const app = await h.build({ jobs: true, config: fast });
    // The lead is taken and the pool rebuilt from Postgres: none of that needs the node.
    await expect
      .poll(() => redis.hget(ctx.keys.poolEscrow(id), 'status'), { timeout: 15_000 })
      .toBe('active');
    const health = await app.inject({ method: 'GET', url: '/internal/health' });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toMatchObject({ status: 'ok', leader: true });

    // Admin routes that need only Postgres and Redis answer; one that needs the node says so.
    const list = await adminInject(app, 'GET', '/v1/admin/devshards');
    expect(list.statusCode).toBe(200);
    expect(list.body).toContain(id.toString());
    expect((await adminInject(app, 'GET', '/v1/admin/settings')).statusCode).toBe(200);
    const disabled = await adminInject(app, 'POST', '/v1/admin/settings', {
      disabled: { enabled: false, message: 'back soon' },
    });
    expect(disabled.statusCode, disabled.body).toBe(200);
    expect((await adminInject(app, 'GET', '/v1/admin/hosts')).statusCode).toBe(200);
    const rotation = await adminInject(app, 'GET', '/v1/debug/rotation');
    expect(rotation.statusCode).toBe(200);
    expect(rotation.json().chain.error).toMatch(/503/);

    // The proxies' PoC gate reads the last known phase, marked stale, while the node is down.
    await expect.poll(() => redis.hget(phaseKey, 'stale'), { timeout: 15_000 }).toBe('1');
    expect(await redis.hget(phaseKey, 'poc_active')).toMatch(/^[01]$/);
    const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/devshard_gateway_node_stored_copy_total\{what="chain_phase"\} [1-9]/);
    // The node-bound passes back off: no job fails for the outage.
    const phaseQueue = new Queue(QUEUE_NAMES.chainPhase, {
      connection: redis.duplicate(),
      prefix: ctx.keys.bullPrefix,
    });
    try {
      expect(await phaseQueue.getFailedCount()).toBe(0);
      // The node answers again: a fresh reading replaces the stale one within the backoff.
      h.devnet.faults.clear();
      await expect.poll(() => redis.hget(phaseKey, 'stale'), { timeout: 30_000, interval: 250 }).toBeNull();
      expect(await redis.hget(phaseKey, 'block_height')).not.toBeNull();
      expect(await phaseQueue.getFailedCount()).toBe(0);
    } finally {
      await phaseQueue.close();
    }
  });
});
