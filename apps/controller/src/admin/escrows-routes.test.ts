// POST /v1/admin/escrows against the devnet chain, real Postgres and Redis, over Fastify inject.

import { createHash, randomUUID } from 'node:crypto';
import {
  broadcastAndWait,
  createChainClient,
  findEscrowCreatedEvents,
  queryEscrow,
  queryInferenceParams,
} from '@gonka-gateway/chain';
import { GNK, QWEN_MODEL } from '@gonka-gateway/devnet';
import { GatewayError, openSecret, redisKeys } from '@gonka-gateway/shared';
import { type Job, Queue, UnrecoverableError } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordCommitment } from '../chain/commitments.js';
import { createBusinessKey, createEscrow } from '../escrow/create.js';
import { type CreateEscrowJobData, decodeJobError, runCreateEscrowJob } from '../jobs/create-escrow-job.js';
import { QUEUE_NAMES } from '../jobs/queues.js';
import { reconcileOpenCommitments } from '../jobs/reconcile-commitments.js';
import {
  adminHeaders,
  type ControllerHarness,
  ENCRYPTION_KEY,
  startControllerHarness,
} from '../testing/controller-harness.js';
import { lostBroadcastFetch } from '../testing/lost-broadcast.js';

describe('POST /v1/admin/escrows', () => {
  let h: ControllerHarness;
  let app: FastifyInstance;
  beforeAll(async () => {
    h = await startControllerHarness();
    app = await h.build();
  });
  afterAll(async () => {
    await h?.close();
  });

  const creator = () => h.account('creator-0').address;
  const body = (extra: Record<string, unknown> = {}) => ({
    amount: (5n * GNK).toString(),
    model_id: QWEN_MODEL,
    chain_id: h.chainId,
    private_key_env: 'CREATOR_KEY',
    register: true,
    ...extra,
  });
  const post = (payload: unknown, headers: Record<string, string> = adminHeaders()) =>
    app.inject({ method: 'POST', url: '/v1/admin/escrows', headers, payload: payload as object });
  const commitmentCount = async () =>
    Number((await h.sql`select count(*)::int as n from chain_tx_commitments`)[0]!.n);

  it('refuses a missing or wrong admin key with 401 in the OpenAI shape, and audits the attempt', async () => {
    const missing = await post(body(), {});
    expect(missing.statusCode).toBe(401);
    expect(missing.json()).toEqual({
      error: {
        message: expect.any(String),
        type: 'authentication_error',
        param: null,
        code: 'missing_api_key',
      },
    });
    const wrong = await post(body(), { authorization: `Bearer sk-admin-${'00'.repeat(24)}` });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json().error.code).toBe('invalid_api_key');
    const audit = await h.sql`select actor, action, status_code from admin_audit_log order by id`;
    expect(audit.slice(0, 2)).toEqual([
      { actor: 'anonymous', action: 'POST /v1/admin/escrows', status_code: 401 },
      { actor: 'anonymous', action: 'POST /v1/admin/escrows', status_code: 401 },
    ]);
  });

  it('says exactly what is wrong with a bad request and changes nothing (Postgres or chain)', async () => {
    const balance = h.devnet.chain.balanceOf(creator());
    const lastId = h.devnet.chain.lastEscrowId();
    const cases: Array<[Record<string, unknown>, number, string, RegExp]> = [
      [{ amount: '1000' }, 400, 'amount', /below the chain's min_amount/],
      [{ amount: (1000n * GNK).toString() }, 400, 'amount', /above the chain's max_amount/],
      [{ chain_id: 'other-chain' }, 400, 'chain_id', /does not match the chain's id/],
      [{ model_id: 'no/such-model' }, 400, 'model_id', /not a governance model/],
      [{ private_key_env: 'OUTSIDER_KEY' }, 403, 'private_key_env', /allowed_creator_addresses.*governance/],
      [{ private_key_env: 'NOT_SET_ANYWHERE' }, 400, 'private_key_env', /NOT_SET_ANYWHERE is not set/],
      [{ private_key_env: undefined }, 400, 'private_key_env', /required/],
      [{ private_key: 'zz' }, 400, 'private_key', /both/],
      [{ amount: -5 }, 400, 'amount', /invalid request/],
      [{ amount: 2 ** 60 }, 400, 'amount', /send it as a decimal string/],
    ];
    for (const [extra, status, param, message] of cases) {
      const res = await post(body(extra));
      expect({ extra, status: res.statusCode }).toEqual({ extra, status });
      const error = res.json().error;
      expect({ extra, param: error.param }).toEqual({ extra, param });
      expect(error.message).toMatch(message);
    }
    // A creator who cannot pay deposit + fee: creator-1's whole balance as the deposit.
    const poor = h.account('creator-1').address;
    h.devnet.chain.updateParams((p) => {
      p.devshardEscrow.maxAmount = 10_000n * GNK;
    });
    try {
      const all = h.devnet.chain.balanceOf(poor);
      const res = await post(body({ private_key_env: 'CREATOR_1_KEY', amount: all.toString() }));
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({ param: 'amount' });
      expect(res.json().error.message).toMatch(/less than the deposit .* \+ fee/);
    } finally {
      h.devnet.chain.updateParams((p) => {
        p.devshardEscrow.maxAmount = 10n * GNK;
      });
    }
    expect(h.devnet.chain.balanceOf(creator())).toBe(balance);
    expect(h.devnet.chain.lastEscrowId()).toBe(lastId);
    expect(await commitmentCount()).toBe(0);
    expect((await h.sql`select count(*)::int as n from escrows`)[0]!.n).toBe(0);
  });

  it('creates and registers an escrow: row active with the chain row, session head, commitment included', async () => {
    const before = h.devnet.chain.balanceOf(creator());
    const res = await post(body());
    expect(res.statusCode).toBe(200);
    const out = res.json();
    expect(out).toEqual({
      escrow_id: expect.any(Number),
      tx_hash: expect.stringMatching(/^[0-9A-F]{64}$/),
      creator: creator(),
      registered: true,
    });
    const id = BigInt(out.escrow_id);
    const chainRow = (await queryEscrow(h.chain, id)).escrow!;
    expect(chainRow).toMatchObject({
      creator: creator(),
      amount: 5n * GNK,
      modelId: QWEN_MODEL,
      settled: false,
    });
    const fee = h.devnet.chain.tx(out.tx_hash)!;
    expect(fee).toBeDefined();
    // The creator paid the deposit and the tx fee, nothing else.
    const [commitment] = await h.sql`
      select status, kind, escrow_id::text as escrow_id, result from chain_tx_commitments where tx_hash = ${out.tx_hash}`;
    expect(commitment).toMatchObject({ status: 'included', kind: 'create_escrow', escrow_id: id.toString() });
    expect(commitment!.result.response).toEqual(out);
    const spent = before - h.devnet.chain.balanceOf(creator());
    expect(spent).toBeGreaterThan(5n * GNK);
    const [row] = await h.sql`
      select state, active, model_id, creator, amount::text as amount, signer_key_env, signer_key_encrypted,
             chain_row->>'id' as chain_id_field, version
        from escrows where escrow_id = ${id.toString()}`;
    expect(row).toMatchObject({
      state: 'active',
      active: true,
      model_id: QWEN_MODEL,
      creator: creator(),
      amount: (5n * GNK).toString(),
      signer_key_env: 'CREATOR_KEY',
      signer_key_encrypted: null,
      chain_id_field: id.toString(),
    });
    const [head] = await h.sql`
      select last_nonce::text as last_nonce, fencing_token::text as token from session_heads where escrow_id = ${id.toString()}`;
    expect(head).toEqual({ last_nonce: '0', token: '0' });
  });

  it('with register=false creates on chain only', async () => {
    const res = await post(body({ register: false }));
    expect(res.statusCode).toBe(200);
    const id = res.json().escrow_id;
    expect(res.json().registered).toBe(false);
    expect(await h.sql`select 1 from escrows where escrow_id = ${id}`).toHaveLength(0);
    expect((await queryEscrow(h.chain, BigInt(id))).escrow?.creator).toBe(creator());
  });

  it('creates one escrow for concurrent and retried requests with one Idempotency-Key', async () => {
    const lastId = h.devnet.chain.lastEscrowId();
    const before = h.devnet.chain.balanceOf(creator());
    const headers = adminHeaders({ 'idempotency-key': 'op-42' });
    const [a, b] = await Promise.all([post(body(), headers), post(body(), headers)]);
    const c = await post(body(), headers);
    expect([a.statusCode, b.statusCode, c.statusCode]).toEqual([200, 200, 200]);
    expect(b.json()).toEqual(a.json());
    expect(c.json()).toEqual(a.json());
    expect(h.devnet.chain.lastEscrowId()).toBe(lastId + 1n);
    const paid = before - h.devnet.chain.balanceOf(creator());
    const fee = paid - 5n * GNK;
    expect(fee).toBeGreaterThan(0n);
    expect(fee).toBeLessThan(GNK); // one deposit, one fee: no second create was paid for
    // The same key for a different request is refused by name.
    const other = await post(body({ amount: (6n * GNK).toString() }), headers);
    expect(other.statusCode).toBe(409);
    expect(other.json().error.param).toBe('Idempotency-Key');
  });

  it('runs more concurrent creates than the lock slots without starving the connection pool', async () => {
    const lastId = h.devnet.chain.lastEscrowId();
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        post(body({ register: i % 2 === 0 }), adminHeaders({ 'idempotency-key': `many-${i}` })),
      ),
    );
    expect(results.map((r) => r.statusCode)).toEqual(Array(12).fill(200));
    expect(new Set(results.map((r) => r.json().escrow_id)).size).toBe(12);
    expect(h.devnet.chain.lastEscrowId()).toBe(lastId + 12n);
  });

  it('stores a body private_key only encrypted, and never echoes or audits it', async () => {
    const hex = h.env.CREATOR_KEY!;
    const res = await post(body({ private_key_env: undefined, private_key: hex }));
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain(hex);
    const id = res.json().escrow_id;
    const [row] = await h.sql`
      select signer_key_env, signer_key_encrypted from escrows where escrow_id = ${id}`;
    expect(row!.signer_key_env).toBeNull();
    const sealed = new Uint8Array(row!.signer_key_encrypted);
    expect(Buffer.from(sealed).toString('hex')).not.toContain(hex);
    expect(Buffer.from(openSecret(Buffer.from(ENCRYPTION_KEY, 'hex'), sealed)).toString('hex')).toBe(hex);
    const audit = await h.sql`select request::text as request from admin_audit_log where status_code = 200`;
    expect(audit.length).toBeGreaterThan(0);
    for (const a of audit) expect(a.request).not.toContain(hex);
    expect(audit.some((a) => a.request.includes('"private_key": "[redacted]"'))).toBe(true);

    // Without GATEWAY_ENCRYPTION_KEY a body key is refused (nothing created).
    const plain = await h.build({ encryption: false });
    const lastId = h.devnet.chain.lastEscrowId();
    const refused = await plain.inject({
      method: 'POST',
      url: '/v1/admin/escrows',
      headers: adminHeaders(),
      payload: body({ private_key_env: undefined, private_key: hex }),
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toMatchObject({ param: 'private_key' });
    expect(refused.json().error.message).toMatch(/GATEWAY_ENCRYPTION_KEY/);
    expect(refused.body).not.toContain(hex);
    expect(h.devnet.chain.lastEscrowId()).toBe(lastId);
  });

  it('after a crash between broadcast and result, a retry reconciles the committed tx and creates nothing new', async () => {
    // What a controller killed after broadcasting leaves behind: the commitment (prepared) and a tx
    // the chain included. The retry with the same Idempotency-Key must find it, not sign a new one.
    const ctx = h.context();
    const signer = await ctx.signerFor(h.account('creator-0').key, h.chainId);
    const params = (await import('@gonka-gateway/chain')).queryInferenceParams;
    const tx = signer.prepareCreateEscrow(
      { amount: 5n * GNK, modelId: QWEN_MODEL },
      (await params(h.chain)).fee,
    );
    const request = {
      amount: (5n * GNK).toString(),
      model_id: QWEN_MODEL,
      chain_id: h.chainId,
      register: true,
      creator: creator(),
    };
    await recordCommitment(h.sql, {
      kind: 'create_escrow',
      businessKey: createBusinessKey('crash-1'),
      tx,
      result: { request },
    });
    const outcome = await broadcastAndWait(h.chain, tx, { intervalMs: 20, timeoutMs: 20_000 });
    expect(outcome.status).toBe('included');
    const [created] = findEscrowCreatedEvents(outcome.status === 'included' ? outcome.events : []);
    const lastId = h.devnet.chain.lastEscrowId();
    expect(lastId).toBe(created!.escrowId);

    const res = await post(body(), adminHeaders({ 'idempotency-key': 'crash-1' }));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      escrow_id: Number(created!.escrowId),
      tx_hash: tx.txHash,
      registered: true,
    });
    expect(h.devnet.chain.lastEscrowId()).toBe(lastId);
    expect(await h.sql`select state from escrows where escrow_id = ${lastId.toString()}`).toEqual([
      { state: 'active' },
    ]);
  });

  it('a create whose broadcast answer is lost answers 504 with the hash; the retry with the key finds that tx', async () => {
    const broadcast = lostBroadcastFetch();
    const blind = h.context({
      chain: createChainClient({
        chainRest: h.devnet.urls.chainRest,
        publicApi: h.devnet.urls.node,
        fetch: broadcast.fetch,
      }),
      poll: { intervalMs: 20, timeoutMs: 300 },
    });
    const lastId = h.devnet.chain.lastEscrowId();
    const request = {
      amount: 5n * GNK,
      modelId: QWEN_MODEL,
      chainId: h.chainId,
      register: true,
      key: h.account('creator-0').key,
      keySource: { env: 'CREATOR_KEY' },
      idempotencyKey: 'lost-answer',
    };
    const lost = await createEscrow(blind, request).catch((err: unknown) => err);
    expect(lost).toBeInstanceOf(GatewayError);
    expect((lost as GatewayError).status).toBe(504);
    const [commitment] = await h.sql`
      select tx_hash, status from chain_tx_commitments where business_key = ${createBusinessKey('lost-answer')}`;
    expect(commitment!.status).toBe('unknown');
    expect((lost as GatewayError).message).toContain(commitment!.tx_hash);
    // It landed; the retry must find it by hash, not sign a second create.
    expect(h.devnet.chain.lastEscrowId()).toBe(lastId + 1n);
    broadcast.restore();
    const found = await createEscrow(blind, request);
    expect(found).toMatchObject({
      escrow_id: Number(lastId + 1n),
      tx_hash: commitment!.tx_hash,
      registered: true,
    });
    expect(h.devnet.chain.lastEscrowId()).toBe(lastId + 1n);
  });

  it('the reconcile job records the outcome of a tx whose answer was lost, and expires one that never landed', async () => {
    const ctx = h.context();
    const signer = await ctx.signerFor(h.account('creator-0').key, h.chainId);
    const { queryInferenceParams } = await import('@gonka-gateway/chain');
    const fee = (await queryInferenceParams(h.chain)).fee;
    const landed = signer.prepareCreateEscrow({ amount: 5n * GNK, modelId: QWEN_MODEL }, fee);
    const lost = signer.prepareCreateEscrow({ amount: 5n * GNK, modelId: QWEN_MODEL }, fee);
    await recordCommitment(h.sql, { kind: 'create_escrow', businessKey: 'test:landed', tx: landed });
    await recordCommitment(h.sql, { kind: 'create_escrow', businessKey: 'test:lost', tx: lost });
    await h.sql`update chain_tx_commitments set status = 'unknown' where tx_hash in (${landed.txHash}, ${lost.txHash})`;
    await broadcastAndWait(h.chain, landed, { intervalMs: 20, timeoutMs: 20_000 });
    // `lost` was never sent; it stays pending until its timeout has passed.
    const first = await reconcileOpenCommitments(ctx);
    expect(first).toMatchObject({ included: 1, pending: 1 });
    await h.sql`update chain_tx_commitments set expires_at = now() - interval '1 second' where tx_hash = ${lost.txHash}`;
    const second = await reconcileOpenCommitments(ctx);
    expect(second).toMatchObject({ expired: 1, checked: 1 });
    const rows = await h.sql`
      select tx_hash, status from chain_tx_commitments where tx_hash in (${landed.txHash}, ${lost.txHash}) order by status`;
    expect(rows).toEqual([
      { tx_hash: lost.txHash, status: 'expired' },
      { tx_hash: landed.txHash, status: 'included' },
    ]);
  });

  describe('the create-escrow job', () => {
    let queue: Queue;
    beforeAll(() => {
      queue = new Queue(QUEUE_NAMES.createEscrow, {
        connection: h.redis.redis.duplicate(),
        prefix: redisKeys(h.redis.prefix).bullPrefix,
      });
    });
    afterAll(async () => {
      await queue?.close();
    });
    const jobCount = async () => Object.values(await queue.getJobCounts()).reduce((a, b) => a + b, 0);
    const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
    const jobOf = (data: CreateEscrowJobData) => ({ data }) as Job<CreateEscrowJobData>;
    const jobData = (requestKey: string, amount: bigint): CreateEscrowJobData => ({
      request_key: requestKey,
      request: {
        amount: amount.toString(),
        model_id: QWEN_MODEL,
        chain_id: h.chainId,
        register: false,
        creator: creator(),
      },
      key_source: { env: 'CREATOR_KEY' },
    });

    it('concurrent POSTs with one Idempotency-Key, to one controller and to two, enqueue one job, id from the key', async () => {
      const second = await h.build();
      const before = await jobCount();
      const lastId = h.devnet.chain.lastEscrowId();
      const headers = adminHeaders({ 'idempotency-key': 'double-click' });
      const [a, b, c] = await Promise.all([
        post(body(), headers),
        post(body(), headers),
        second.inject({ method: 'POST', url: '/v1/admin/escrows', headers, payload: body() }),
      ]);
      expect([a.statusCode, b.statusCode, c.statusCode]).toEqual([200, 200, 200]);
      expect(b.json()).toEqual(a.json());
      expect(c.json()).toEqual(a.json());
      expect(await jobCount()).toBe(before + 1);
      await second.close();
      const job = await queue.getJob(`create-escrow-${sha256('double-click')}`);
      expect(await job!.getState()).toBe('completed');
      expect(job!.attemptsMade).toBe(1);
      expect(job!.returnvalue).toEqual(a.json());
      expect(JSON.stringify(job!.data)).not.toContain(h.env.CREATOR_KEY!);
      expect(h.devnet.chain.lastEscrowId()).toBe(lastId + 1n);
    });

    it('when the wait runs out: 202 with the job id and tx hash, and GET follows the job to the escrow', async () => {
      const impatient = await h.build({ createWaitMs: 1 });
      const lastId = h.devnet.chain.lastEscrowId();
      const res = await impatient.inject({
        method: 'POST',
        url: '/v1/admin/escrows',
        headers: adminHeaders({ 'idempotency-key': 'impatient' }),
        payload: body(),
      });
      expect(res.statusCode, res.body).toBe(202);
      expect(res.json()).toMatchObject({
        job_id: `create-escrow-${sha256('impatient')}`,
        state: expect.any(String),
      });
      const follow = () =>
        app.inject({
          method: 'GET',
          url: `/v1/admin/escrows/jobs/${res.json().job_id}`,
          headers: adminHeaders(),
        });
      await expect.poll(async () => (await follow()).json().state, { timeout: 30_000 }).toBe('completed');
      const done = (await follow()).json();
      expect(done).toMatchObject({
        job_id: res.json().job_id,
        result: { escrow_id: Number(lastId + 1n), registered: true },
        error: null,
      });
      expect(done.tx_hash).toBe(done.result.tx_hash);
      if (res.json().tx_hash !== null) expect(res.json().tx_hash).toBe(done.tx_hash);
      // The same key afterwards answers the stored result; nothing else was created.
      const again = await post(body(), adminHeaders({ 'idempotency-key': 'impatient' }));
      expect(again.json()).toEqual(done.result);
      expect(h.devnet.chain.lastEscrowId()).toBe(lastId + 1n);
      const missing = await follow().then(() =>
        app.inject({
          method: 'GET',
          url: '/v1/admin/escrows/jobs/create-escrow-nope',
          headers: adminHeaders(),
        }),
      );
      expect(missing.statusCode).toBe(404);
      expect(missing.json().error.param).toBe('job_id');
      await impatient.close();
    });

    it('another attempt of a job without an Idempotency-Key resumes its committed tx, never signs anew', async () => {
      // What a first attempt that died after broadcasting leaves: the commitment under the
      // request's key, and a tx the chain included.
      const ctx = h.context();
      const requestKey = `request-${randomUUID()}`;
      const signer = await ctx.signerFor(h.account('creator-0').key, h.chainId);
      const tx = signer.prepareCreateEscrow(
        { amount: 5n * GNK, modelId: QWEN_MODEL },
        (await queryInferenceParams(h.chain)).fee,
      );
      const data = jobData(requestKey, 5n * GNK);
      await recordCommitment(h.sql, {
        kind: 'create_escrow',
        businessKey: `create_escrow:request:${requestKey.slice('request-'.length)}`,
        tx,
        result: { request: data.request, key_source: data.key_source },
      });
      await broadcastAndWait(h.chain, tx, { intervalMs: 20, timeoutMs: 20_000 });
      const lastId = h.devnet.chain.lastEscrowId();
      const retried = await runCreateEscrowJob(ctx, jobOf(data));
      expect(retried).toMatchObject({ escrow_id: Number(lastId), tx_hash: tx.txHash, registered: false });
      expect(h.devnet.chain.lastEscrowId()).toBe(lastId);
    });

    it('a money rule broken when the job runs (amount above the live max_amount) ends it unrecoverably, naming the field', async () => {
      const lastId = h.devnet.chain.lastEscrowId();
      const broke = jobData(`request-${randomUUID()}`, 1_000n * GNK);
      const err = await runCreateEscrowJob(h.context(), jobOf(broke)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UnrecoverableError);
      const decoded = decodeJobError((err as Error).message);
      expect(decoded.status).toBe(400);
      expect(decoded.param).toBe('amount');
      expect(decoded.message).toMatch(/max_amount/);
      expect(h.devnet.chain.lastEscrowId()).toBe(lastId);
      expect(
        await h.sql`select 1 from chain_tx_commitments where result->'request'->>'amount' = ${broke.request.amount}`,
      ).toHaveLength(0);
    });

    it('a job that failed for no rule (stalled past the limit, retries spent) answers 503 and says how to resume', () => {
      for (const reason of [
        'job stalled more than allowable limit',
        'connect ECONNREFUSED 127.0.0.1:1317',
        undefined,
      ]) {
        const decoded = decodeJobError(reason);
        expect(decoded.status).toBe(503);
        expect(decoded.code).toBe('service_unavailable');
        expect(decoded.message).toMatch(/same Idempotency-Key/);
        expect(decoded.message).not.toContain('ECONNREFUSED');
      }
    });
  });
});
