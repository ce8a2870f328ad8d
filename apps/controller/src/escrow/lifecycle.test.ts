// An escrow's lifecycle through the controller on the devnet: create + register over the admin API,
// an owner (lease + UserSession on the Postgres store, as a proxy replica runs it) serves inferences,
// finalize waits for the owner's hand-over and returns the stored document.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createChainClient, findEscrowSettledEvents, lookupTx, queryEscrow } from '@gonka-gateway/chain';
import { GNK, QWEN_MODEL } from '@gonka-gateway/devnet';
import { HttpHostTransport, UserSession } from '@gonka-gateway/devshard/session';
import { creatorKeyFromEnv, EscrowLease, OwnershipRuntime } from '@gonka-gateway/escrow-runtime';
import { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControllerContext } from '../controller-context.js';
import { QUEUE_NAMES } from '../jobs/queues.js';
import {
  adminHeaders,
  adminInject,
  type ControllerHarness,
  createRegisteredEscrow,
  startControllerHarness,
} from '../testing/controller-harness.js';
import { devnetSessionClock } from '../testing/devnet-clock.js';
import { lostBroadcastFetch } from '../testing/lost-broadcast.js';
import { settleEscrow } from './settle.js';

describe('escrow lifecycle through the controller', () => {
  let h: ControllerHarness;
  let app: FastifyInstance;
  let ctx: ControllerContext;
  beforeAll(async () => {
    h = await startControllerHarness();
    app = await h.build({ drainWaitMs: 1_000, jobs: true });
    ctx = h.context();
  });
  afterAll(async () => {
    await h?.close();
  });

  const call = (method: 'GET' | 'POST', url: string, payload?: object) =>
    adminInject(app, method, url, payload);

  const createRegistered = () => createRegisteredEscrow(app, h.chainId);

  /** What a proxy replica does when it claims the escrow: lease, open, record the token. */
  const ownAs = async (escrowId: bigint, replicaId: string) => {
    const lease = await EscrowLease.acquire({
      redis: h.redis.redis,
      keys: ctx.keys,
      escrowId,
      replicaId,
      ttlMs: 10_000,
    });
    if (!lease) throw new Error('escrow already leased');
    await ctx.hosts.refresh();
    const signer = h.account('creator-0').key;
    const clock = devnetSessionClock(h.devnet);
    const session = await UserSession.open({
      store: ctx.store,
      escrowId,
      signer,
      transport: new HttpHostTransport({ signer, nowSeconds: clock.nowSeconds }),
      resolveHost: ctx.hosts.resolve,
      writeGuard: lease.guard,
      clock,
    });
    await lease.setToken(session.fencingToken);
    return { lease, session };
  };

  const infer = (session: UserSession, i: number) => {
    const bytes = new TextEncoder().encode(
      JSON.stringify({
        model: QWEN_MODEL,
        messages: [{ role: 'user', content: `question ${i}` }],
        max_tokens: 64,
      }),
    );
    return session.infer({
      body: bytes,
      model: QWEN_MODEL,
      inputLength: BigInt(bytes.length),
      maxTokens: 64n,
      stream: false,
    });
  };

  it('finalize drains first (409 while the owner holds it), then returns the same stored document every time', async () => {
    const id = await createRegistered();
    const owner = await ownAs(id, 'replica-a');
    for (let i = 0; i < 3; i++) await infer(owner.session, i);

    const busy = await call('POST', `/devshard/${id}/v1/finalize`);
    expect(busy.statusCode).toBe(409);
    expect(busy.json().error.message).toMatch(
      /draining: its owner still holds it with 0 request\(s\) in flight/,
    );
    expect(await h.sql`select state from escrows where escrow_id = ${id.toString()}`).toEqual([
      { state: 'draining' },
    ]);

    // The owner's claim pass sees `draining`: it drains its session and lets go of the lease.
    await owner.session.close();
    await owner.lease.release();

    const done = await call('POST', `/devshard/${id}/v1/finalize`);
    expect(done.statusCode).toBe(200);
    expect(done.headers['content-type']).toMatch(/application\/json/);
    const doc = done.json();
    expect(doc).toMatchObject({ escrow_id: id.toString(), version: expect.any(String) });
    expect(doc.fees).toBeDefined();
    const [row] = await h.sql`
      select e.state, f.fees::text as fees, f.nonce::text as nonce from escrows e
        join finalize_documents f on f.escrow_id = e.escrow_id where e.escrow_id = ${id.toString()}`;
    expect(row).toMatchObject({ state: 'finalized', fees: String(doc.fees) });
    expect(await readFile(join(h.storageDir, 'finalize', `${id}.json`), 'utf8')).toBe(done.body);

    const again = await call('POST', `/devshard/${id}/v1/finalize`);
    expect(again.body).toBe(done.body);
    // The only registered escrow: /v1/finalize is the same call.
    const single = await call('POST', '/v1/finalize');
    expect(single.statusCode).toBe(200);
    expect(single.body).toBe(done.body);

    await createRegistered();
    const two = await call('POST', '/v1/finalize');
    expect(two.statusCode).toBe(409);
    expect(two.json().error.message).toMatch(/exactly one registered escrow; 2 are registered/);
  });

  /** Waits for a BullMQ job to end; the bound only stops a broken run. */
  const jobEnd = async (jobId: string) => {
    const queue = new Queue(QUEUE_NAMES.settle, {
      connection: h.redis.redis.duplicate(),
      prefix: ctx.keys.bullPrefix,
    });
    try {
      for (let i = 0; i < 600; i++) {
        const state = await queue.getJobState(jobId);
        // Read after the state: a job fetched while still active carries no failedReason yet.
        if (state === 'completed' || state === 'failed')
          return { state, reason: (await queue.getJob(jobId))!.failedReason };
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`job ${jobId} did not end`);
    } finally {
      await queue.close();
    }
  };

  it('settle: finalizes first, commits and settles once; deposit = host payouts + fees + refund to the ngonka', async () => {
    const id = await createRegistered();
    const owner = await ownAs(id, 'replica-b');
    for (let i = 0; i < 4; i++) await infer(owner.session, i);
    await owner.session.close();
    await owner.lease.release();

    expect(
      (await call('POST', `/v1/admin/devshards/${id}/settle`, { private_key_env: 'UNSET_VAR' })).json().error,
    ).toMatchObject({
      param: 'private_key_env',
    });
    // A key that is not the creator's: the job refuses without retrying, and nothing moves.
    const wrong = await call('POST', `/v1/admin/devshards/${id}/settle`, {
      private_key_env: 'CREATOR_1_KEY',
    });
    expect(wrong.statusCode).toBe(202);
    expect(wrong.json()).toEqual({ escrow_id: Number(id), job_id: `settle-${id}`, state: 'active' });
    const refused = await jobEnd(wrong.json().job_id);
    expect(refused.state).toBe('failed');
    expect(refused.reason).toMatch(/the settler must be the creator/);
    expect(await h.sql`select state from escrows where escrow_id = ${id.toString()}`).toEqual([
      { state: 'active' },
    ]);

    // The entry the owner left in the pool when it let go.
    await h.redis.redis.hset(ctx.keys.poolEscrow(id), {
      escrow_id: id.toString(),
      model_id: QWEN_MODEL,
      status: 'draining',
      capacity_weight: '1',
      balance_estimate: '1',
      nonce: '4',
      owner: '',
      updated_at_ms: '1',
    });
    await h.redis.redis.sadd(ctx.keys.poolModel(QWEN_MODEL), id.toString());
    const chain = h.devnet.chain;
    const creator = h.account('creator-0').address;
    const row = (await queryEscrow(h.chain, id)).escrow!;
    const hosts = [...new Set(row.slots)];
    const held = () => hosts.reduce((sum, a) => sum + chain.balanceOf(a) + chain.epochBalanceOf(a), 0n);
    const before = { creator: chain.balanceOf(creator), hosts: held() };

    const accepted = await call('POST', `/v1/admin/devshards/${id}/settle`, {
      private_key_env: 'CREATOR_KEY',
    });
    expect(accepted.statusCode).toBe(202);
    expect((await jobEnd(accepted.json().job_id)).state).toBe('completed');
    const view = (await call('GET', `/v1/admin/devshards/${id}`)).json();
    expect(view).toMatchObject({
      state: 'settled',
      finalized: true,
      settle_tx_hash: expect.stringMatching(/^[0-9A-F]{64}$/),
    });
    expect((await queryEscrow(h.chain, id)).escrow?.settled).toBe(true);
    expect(view.pool).toBeNull(); // out of the pool for good
    expect(await h.redis.redis.sismember(ctx.keys.poolModel(QWEN_MODEL), id.toString())).toBe(0);

    const found = await lookupTx(h.chain, view.settle_tx_hash);
    expect(found.kind).toBe('found');
    const events = found.kind === 'found' && found.outcome.status === 'included' ? found.outcome.events : [];
    const [settled] = findEscrowSettledEvents(events);
    const doc = JSON.parse((await call('POST', `/devshard/${id}/v1/finalize`)).body);
    expect(settled!.fees).toBe(BigInt(doc.fees));
    // deposit = host payouts + fees + refund, to the last ngonka; the refund is the creator's whole
    // gain (settlement is fee-exempt) and the hosts received exactly the payouts.
    expect(settled!.totalPayout + settled!.remainder).toBe(5n * GNK);
    const costs = doc.host_stats.reduce((s: bigint, x: { cost: string | number }) => s + BigInt(x.cost), 0n);
    expect(settled!.totalPayout).toBe(costs + BigInt(doc.fees));
    expect(chain.balanceOf(creator) - before.creator).toBe(settled!.remainder);
    expect(held() - before.hosts).toBe(settled!.totalPayout);

    // Settling again is done, not a second tx.
    const again = await call('POST', `/v1/admin/devshards/${id}/settle`, { private_key_env: 'CREATOR_KEY' });
    expect(again.statusCode).toBe(202);
    expect((await jobEnd(again.json().job_id)).state).toBe('completed');
    const commitments = await h.sql`
      select status from chain_tx_commitments where kind = 'settle_escrow' and escrow_id = ${id.toString()}`;
    expect(commitments).toEqual([{ status: 'included' }]);
    // After settle the local record may go.
    expect(
      (await app.inject({ method: 'DELETE', url: `/v1/admin/devshards/${id}`, headers: adminHeaders() }))
        .statusCode,
    ).toBe(200);
  });

  it('a real owner replica (OwnershipRuntime) sees draining on its claim pass, hands over, and finalize completes', async () => {
    const id = await createRegistered();
    const runtime = new OwnershipRuntime({
      sql: h.sql,
      redis: h.redis.redis,
      keys: ctx.keys,
      replicaId: 'replica-real',
      url: 'http://127.0.0.1:1',
      leaseTtlMs: 3_000,
      store: ctx.store,
      signerFor: creatorKeyFromEnv({ ...h.env, DEVSHARD_PRIVATE_KEY: h.env.CREATOR_KEY }),
      resolveHost: ctx.hosts.resolve,
      prepare: () => ctx.hosts.refresh(),
      session: { clock: devnetSessionClock(h.devnet) },
    });
    await runtime.start();
    try {
      // Claimed within a pass (TTL/3) and serving once its session is open.
      const serving = () => runtime.sessions.list().some((e) => e.escrowId === id && e.state === 'serving');
      for (let i = 0; i < 300 && !serving(); i++) await new Promise((r) => setTimeout(r, 50));
      expect(serving()).toBe(true);
      for (let i = 0; i < 2; i++) {
        const bytes = new TextEncoder().encode(
          JSON.stringify({ model: QWEN_MODEL, messages: [{ role: 'user', content: `real ${i}` }] }),
        );
        await runtime.sessions.infer(id, {
          body: bytes,
          model: QWEN_MODEL,
          inputLength: BigInt(bytes.length),
          maxTokens: 64n,
          stream: false,
        });
      }
      const patient = await h.build({ drainWaitMs: 15_000 });
      const res = await patient.inject({
        method: 'POST',
        url: `/devshard/${id}/v1/finalize`,
        headers: adminHeaders(),
      });
      expect(res.statusCode).toBe(200);
      expect(runtime.sessions.owned().has(id)).toBe(false);
      expect(JSON.parse(res.body).escrow_id).toBe(id.toString());
      // The diffs the owner signed and the controller's finalize rounds form one chain of nonces.
      const [head] =
        await h.sql`select last_nonce::int as n from session_heads where escrow_id = ${id.toString()}`;
      expect(head!.n).toBeGreaterThan(2);
    } finally {
      await runtime.close();
    }
  });

  it('a settle whose broadcast answer is lost is reconciled by hash on retry: settled once, refunded once', async () => {
    const id = await createRegistered();
    const owner = await ownAs(id, 'replica-c');
    await infer(owner.session, 0);
    await owner.session.close();
    await owner.lease.release();

    // The node takes the broadcast but the answer never arrives, and the tx index stays dark: the
    // controller cannot know whether the tx landed (a crash between broadcast and result looks the same).
    const broadcast = lostBroadcastFetch();
    const lossyChain = createChainClient({
      chainRest: h.devnet.urls.chainRest,
      publicApi: h.devnet.urls.node,
      timeoutMs: 10_000,
      fetch: broadcast.fetch,
    });
    const creator = h.account('creator-0').address;
    const before = h.devnet.chain.balanceOf(creator);
    const blind = h.context({ chain: lossyChain, poll: { intervalMs: 20, timeoutMs: 300 } });
    await expect(settleEscrow(blind, id, 'CREATOR_KEY')).rejects.toThrow(/outcome unknown/);
    expect(await h.sql`select state from escrows where escrow_id = ${id.toString()}`).toEqual([
      { state: 'settling' },
    ]);
    const [pending] = await h.sql`
      select tx_hash, status from chain_tx_commitments where kind = 'settle_escrow' and escrow_id = ${id.toString()}`;
    expect(pending!.status).toBe('unknown');
    // It did land.
    expect((await queryEscrow(h.chain, id)).escrow?.settled).toBe(true);

    // The job's retry: the hash is looked up before anything is signed.
    broadcast.restore();
    expect(await settleEscrow(blind, id, 'CREATOR_KEY')).toEqual({
      status: 'settled',
      txHash: pending!.tx_hash,
    });
    expect(await settleEscrow(blind, id, 'CREATOR_KEY')).toEqual({ status: 'settled', txHash: null });
    const commitments = await h.sql`
      select tx_hash, status from chain_tx_commitments where kind = 'settle_escrow' and escrow_id = ${id.toString()}`;
    expect(commitments).toEqual([{ tx_hash: pending!.tx_hash, status: 'included' }]);
    const found = await lookupTx(h.chain, pending!.tx_hash);
    const [event] = findEscrowSettledEvents(
      found.kind === 'found' && found.outcome.status === 'included' ? found.outcome.events : [],
    );
    expect(h.devnet.chain.balanceOf(creator) - before).toBe(event!.remainder);
  });

  it('finalize with an empty id is 404 with an empty body; an unknown id 404 by name', async () => {
    const empty = await app.inject({
      method: 'POST',
      url: '/devshard//v1/finalize',
      headers: adminHeaders(),
    });
    expect(empty.statusCode).toBe(404);
    expect(empty.body).toBe('');
    const unknown = await call('POST', '/devshard/987654/v1/finalize');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error.code).toBe('escrow_not_found');
  });

  // These two move the chain's epochs: they run last in this file.
  it('a settle after half of the window passed succeeds and is counted in /metrics', async () => {
    const id = await createRegistered();
    const escrowEpoch = (await queryEscrow(h.chain, id)).escrow!.epochIndex;
    h.devnet.epochs.advanceTo(escrowEpoch + 1n);
    const res = await call('POST', `/v1/admin/devshards/${id}/settle`, { private_key_env: 'CREATOR_KEY' });
    expect(res.statusCode).toBe(202);
    // The whole end, so that a failure shows the job's reason.
    expect(await jobEnd(res.json().job_id)).toEqual({ state: 'completed', reason: undefined });
    expect((await queryEscrow(h.chain, id)).escrow?.settled).toBe(true);
    const metrics = await app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(/devshard_gateway_settle_window_late_total\{stage="half_passed"\} 1/);
  });

  it('a settle after the window closed stops at once with the reason, sending nothing', async () => {
    const id = await createRegistered();
    const escrowEpoch = (await queryEscrow(h.chain, id)).escrow!.epochIndex;
    h.devnet.epochs.advanceTo(escrowEpoch + 2n);
    const res = await call('POST', `/v1/admin/devshards/${id}/settle`, { private_key_env: 'CREATOR_KEY' });
    expect(res.statusCode).toBe(202);
    const end = await jobEnd(res.json().job_id);
    expect(end.state).toBe('failed');
    expect(end.reason).toMatch(/can no longer be settled: the chain is in epoch .* \(settle rule 9\)/);
    expect(await h.sql`select state from escrows where escrow_id = ${id.toString()}`).toEqual([
      { state: 'active' },
    ]);
    expect(
      await h.sql`select 1 from chain_tx_commitments where kind = 'settle_escrow' and escrow_id = ${id.toString()}`,
    ).toEqual([]);
  });
});
