// An escrow's lifecycle through the controller on the devnet: create + register over the admin API,
// an owner (lease + UserSession on the Postgres store, as a proxy replica runs it) serves inferences,
// finalize waits for the owner's hand-over and returns the stored document.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GNK, QWEN_MODEL } from '@gonka-gateway/devnet';
import { HttpHostTransport, UserSession } from '@gonka-gateway/devshard';
import { EscrowLease } from '@gonka-gateway/escrow-runtime';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControllerContext } from '../controller-context.js';
import {
  adminHeaders,
  type ControllerHarness,
  startControllerHarness,
} from '../testing/controller-harness.js';
import { devnetSessionClock } from '../testing/devnet-clock.js';

describe('escrow lifecycle through the controller', () => {
  let h: ControllerHarness;
  let app: FastifyInstance;
  let ctx: ControllerContext;
  beforeAll(async () => {
    h = await startControllerHarness();
    app = await h.build({ drainWaitMs: 1_000 });
    ctx = h.context();
  });
  afterAll(async () => {
    await h?.close();
  });

  const call = (method: 'GET' | 'POST', url: string, payload?: object) =>
    app.inject({ method, url, headers: adminHeaders(), ...(payload ? { payload } : {}) });

  const createRegistered = async () => {
    const res = await call('POST', '/v1/admin/escrows', {
      amount: (5n * GNK).toString(),
      model_id: QWEN_MODEL,
      chain_id: h.chainId,
      private_key_env: 'CREATOR_KEY',
      register: true,
    });
    expect(res.statusCode).toBe(200);
    return BigInt(res.json().escrow_id);
  };

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
});
