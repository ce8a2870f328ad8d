// Finalize while the public node and the chain REST answer 503 (devnet faults; docs/operator-guide.md
// "When the public node is down"): a restarted controller opens the escrow's session from the
// participants the owner stored (escrow_hosts) and the params' last known copy (last_known_reads),
// logs the marker and counts it; settlement, which needs the chain, waits for it and then settles.
import { GNK, QWEN_MODEL } from '@gonka-gateway/devnet';
import {
  creatorKeyFromEnv,
  HostDirectory,
  OwnershipRuntime,
  PostgresStoredHosts,
} from '@gonka-gateway/escrow-runtime';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControllerContext } from '../controller-context.js';
import { JOB_IDS, QUEUE_NAMES } from '../jobs/queues.js';
import {
  adminHeaders,
  type ControllerHarness,
  createRegisteredEscrow,
  startControllerHarness,
} from '../testing/controller-harness.js';
import { devnetSessionClock } from '../testing/devnet-clock.js';

describe('finalize and settle while the public node and the chain REST are down', () => {
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

  it('a restarted controller finalizes from the stored copies; settle waits for the chain, then settles once', async () => {
    const app = await h.build({ drainWaitMs: 15_000, jobs: true });
    const id = await createRegisteredEscrow(app, h.chainId);
    // An owner as a proxy replica runs it: participants stored once its session opened.
    const hosts = new HostDirectory({ client: h.chain, stored: new PostgresStoredHosts(h.sql) });
    const runtime = new OwnershipRuntime({
      sql: h.sql,
      redis: h.redis.redis,
      keys: ctx.keys,
      replicaId: 'replica-node-down',
      url: 'http://127.0.0.1:1',
      leaseTtlMs: 3_000,
      store: ctx.store,
      signerFor: creatorKeyFromEnv({ ...h.env, DEVSHARD_PRIVATE_KEY: h.env.CREATOR_KEY }),
      resolveHost: hosts.resolve,
      prepare: (escrow) => hosts.prepareFor(escrow.escrowId),
      opened: (escrowId, participants) => hosts.remember(escrowId, participants),
      released: (escrowId) => hosts.forget(escrowId),
      session: { clock: devnetSessionClock(h.devnet) },
    });
    await runtime.start();
    try {
      const serving = () => runtime.sessions.list().some((e) => e.escrowId === id && e.state === 'serving');
      await expect.poll(serving, { timeout: 15_000 }).toBe(true);
      for (let i = 0; i < 2; i++) {
        const bytes = new TextEncoder().encode(
          JSON.stringify({ model: QWEN_MODEL, messages: [{ role: 'user', content: `outage ${i}` }] }),
        );
        await runtime.sessions.infer(id, {
          body: bytes,
          model: QWEN_MODEL,
          inputLength: BigInt(bytes.length),
          maxTokens: 64n,
          stream: false,
        });
      }
      const slots = new Set((await ctx.store.load(id.toString()))!.record.escrow.slots);
      const stored = async () =>
        (
          await h.sql<{ participant: string }[]>`
            select participant from escrow_hosts where escrow_id = ${id.toString()}::numeric`
        ).map((r) => r.participant);
      await expect.poll(async () => new Set(await stored())).toEqual(slots);

      h.devnet.faults.set({ nodeQuery: { status: 503 }, chainQuery: { status: 503 } });
      const nodeAnswer = await fetch(`${h.devnet.urls.node}/v1/epochs/current/participants`);
      expect(nodeAnswer.status).toBe(503);

      // A controller started during the outage (nothing in memory) finalizes.
      const restarted = await h.build({ drainWaitMs: 15_000, jobs: true });
      const res = await restarted.inject({
        method: 'POST',
        url: `/devshard/${id}/v1/finalize`,
        headers: adminHeaders(),
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(JSON.parse(res.body).escrow_id).toBe(id.toString());
      const metrics = (await restarted.inject({ method: 'GET', url: '/metrics' })).body;
      expect(metrics).toMatch(/devshard_gateway_node_stored_copy_total\{what="participants"\} [1-9]/);
      expect(metrics).toMatch(/devshard_gateway_node_stored_copy_total\{what="inference_params"\} [1-9]/);

      // Settlement asks and broadcasts to the chain: its flow (the finalize child's pre-checks, then
      // the settle) waits, retried with backoff, while it is down.
      const creator = h.account('creator-0').address;
      const before = h.devnet.chain.balanceOf(creator);
      const settle = await restarted.inject({
        method: 'POST',
        url: `/v1/admin/devshards/${id}/settle`,
        headers: adminHeaders(),
        payload: { private_key_env: 'CREATOR_KEY' },
      });
      expect(settle.statusCode, settle.body).toBe(202);
      const queue = new Queue(QUEUE_NAMES.settle, {
        connection: h.redis.redis.duplicate(),
        prefix: ctx.keys.bullPrefix,
      });
      const children = new Queue(QUEUE_NAMES.finalize, {
        connection: h.redis.redis.duplicate(),
        prefix: ctx.keys.bullPrefix,
      });
      try {
        const job = () => queue.getJob(settle.json().job_id);
        const attempts = async () =>
          ((await job())?.attemptsMade ?? 0) +
          ((await children.getJob(JOB_IDS.finalize(id)))?.attemptsMade ?? 0);
        await expect.poll(attempts, { timeout: 20_000 }).toBeGreaterThan(0);
        expect(await (await job())!.getState()).not.toBe('completed');
        h.devnet.faults.clear();
        await expect
          .poll(async () => (await job())?.getState(), { timeout: 60_000, interval: 200 })
          .toBe('completed');
      } finally {
        await queue.close();
        await children.close();
      }
      const [row] = await h.sql<{ state: string }[]>`
        select state from escrows where escrow_id = ${id.toString()}::numeric`;
      expect(row!.state).toBe('settled');
      // The refund came back: the creator holds more than before settling (deposit 5 GNK, spent little).
      expect(h.devnet.chain.balanceOf(creator) - before).toBeGreaterThan(4n * GNK);
    } finally {
      h.devnet.faults.clear();
      await runtime.close();
    }
  });
});
