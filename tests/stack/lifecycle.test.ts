// An escrow's whole life through ONE proxy URL of a real stack (controller + two proxy replicas as OS
// processes on the devnet): admin routes forwarded to the controller, chat with the official openai
// client on both replicas, finalize, settle to the ngonka, deactivate, delete, and a refused input.
import { queryEscrow } from '@gonka-gateway/chain';
import { GNK, QWEN_MODEL } from '@gonka-gateway/devnet';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCall, type Stack, settledEvent, startStack, txFee, USER_KEY } from './stack.js';

const AMOUNT = 5n * GNK;

describe('the stack as processes: create, chat, finalize, settle, deactivate, delete', () => {
  let s: Stack;
  let proxy: string; // the one URL every admin call goes through
  let creatorBefore: bigint;
  let a: { id: number; tx: string };
  let b: { id: number; tx: string };

  beforeAll(async () => {
    s = await startStack();
    proxy = s.proxyUrls[0];
    creatorBefore = s.devnet.chain.balanceOf(s.creator.address);
  }, 120_000);
  afterAll(async () => {
    await s?.close();
  }, 60_000);

  const admin = (method: string, path: string, body?: object, headers: Record<string, string> = {}) =>
    adminCall(proxy, method, path, body, headers);
  const createBody = (register: boolean) => ({
    amount: AMOUNT.toString(),
    model_id: QWEN_MODEL,
    chain_id: s.chainId,
    private_key_env: 'CREATOR_KEY',
    register,
  });
  const escrowCount = async () =>
    Number((await s.sql<{ n: string }[]>`select count(*)::text as n from escrows`)[0]!.n);
  const client = (url: string) =>
    new OpenAI({ apiKey: USER_KEY, baseURL: `${url}/v1`, maxRetries: 0, timeout: 60_000 });
  /** Escrows each replica serves itself (from its /v1/status). */
  const servingPerReplica = async () => {
    const out: number[] = [];
    for (const url of s.proxyUrls) {
      const body = (await (await fetch(`${url}/v1/status`)).json()) as { runtimes: { status: string }[] };
      out.push(body.runtimes.filter((r) => r.status === 'serving').length);
    }
    return out;
  };
  const servingCount = async () => (await servingPerReplica()).reduce((x, y) => x + y, 0);

  it('create with a retried Idempotency-Key makes one escrow; register=false + import inactive + activate', async () => {
    const first = await admin('POST', '/v1/admin/escrows', createBody(true), {
      'idempotency-key': 'stack-a',
    });
    expect(first.status, first.text).toBe(200);
    expect(first.json).toMatchObject({ registered: true, escrow_id: expect.any(Number) });
    const retried = await admin('POST', '/v1/admin/escrows', createBody(true), {
      'idempotency-key': 'stack-a',
    });
    expect(retried.status).toBe(200);
    expect(retried.json).toEqual(first.json);
    a = { id: first.json.escrow_id, tx: first.json.tx_hash };
    expect(await escrowCount()).toBe(1);

    const second = await admin('POST', '/v1/admin/escrows', createBody(false), {
      'idempotency-key': 'stack-b',
    });
    expect(second.status, second.text).toBe(200);
    expect(second.json).toMatchObject({ registered: false });
    b = { id: second.json.escrow_id, tx: second.json.tx_hash };
    expect(b.id).not.toBe(a.id);
    expect(await escrowCount()).toBe(1); // on chain only

    const imported = await admin('POST', '/v1/admin/devshards/import', {
      escrow_id: b.id,
      private_key_env: 'CREATOR_KEY',
    });
    expect(imported.status, imported.text).toBe(201);
    expect(imported.json).toMatchObject({ escrow_id: b.id, active: false, state: 'active' });
    const activated = await admin('POST', `/v1/admin/devshards/${b.id}/activate`);
    expect(activated.status).toBe(200);
    expect(activated.json).toMatchObject({ active: true });
    const list = await admin('GET', '/v1/admin/devshards');
    expect(list.json.data.map((d: { escrow_id: number }) => d.escrow_id).sort()).toEqual([a.id, b.id].sort());
  }, 120_000);

  it('model access api_key: a user key chats on both replicas, streaming and not (one forwards to the owner)', async () => {
    // Before the setting the model is admin-only for user keys.
    await expect(
      client(proxy).chat.completions.create({
        model: QWEN_MODEL,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    ).rejects.toMatchObject({ status: 401 });
    const set = await admin('POST', '/v1/admin/settings', {
      model_limits: [{ model_id: QWEN_MODEL, access_mode: 'api_key' }],
    });
    expect(set.status, set.text).toBe(200);
    expect(set.json.model_limits).toEqual([{ model_id: QWEN_MODEL, access_mode: 'api_key' }]);
    // Both escrows claimed by some replica (each replica sees its own and forwards the rest).
    await expect.poll(servingCount, { timeout: 30_000, interval: 200 }).toBe(2);

    for (const url of s.proxyUrls) {
      await expect
        .poll(
          () =>
            client(url)
              .chat.completions.create({
                model: QWEN_MODEL,
                messages: [{ role: 'user', content: 'settings applied?' }],
                max_tokens: 8,
              })
              .then(() => true)
              .catch(() => false),
          { timeout: 10_000, interval: 200 },
        )
        .toBe(true);
      const plain = await client(url).chat.completions.create({
        model: QWEN_MODEL,
        messages: [{ role: 'user', content: `plain via ${url}` }],
        max_tokens: 16,
      });
      expect(plain.choices[0]!.message.content?.length).toBeGreaterThan(0);
      expect(plain.usage!.completion_tokens).toBeGreaterThan(0);
      const stream = await client(url).chat.completions.create({
        model: QWEN_MODEL,
        messages: [{ role: 'user', content: `stream via ${url}` }],
        max_tokens: 16,
        stream: true,
      });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      expect(text.length).toBeGreaterThan(0);
    }
  }, 120_000);

  it('deactivating one escrow keeps the other serving', async () => {
    const off = await admin('POST', `/v1/admin/devshards/${b.id}/deactivate`);
    expect(off.status).toBe(200);
    expect(off.json).toMatchObject({ active: false });
    await expect.poll(servingCount, { timeout: 15_000, interval: 200 }).toBe(1);
    // One replica owns the remaining escrow and the other owns nothing: its answers below were
    // forwarded to the owner.
    expect((await servingPerReplica()).sort()).toEqual([0, 1]);
    for (const url of s.proxyUrls) {
      const res = await client(url).chat.completions.create({
        model: QWEN_MODEL,
        messages: [{ role: 'user', content: 'still served' }],
        max_tokens: 8,
      });
      expect(res.choices[0]!.message.content?.length).toBeGreaterThan(0);
    }
  }, 60_000);

  it('settlement waits while a chat request is in flight: the stream ends whole, then the escrow settles', async () => {
    // A slow host stream on the one escrow still serving; settle is asked for while it runs.
    s.devnet.model.setLatency({ perTokenMs: 300 });
    const seen: { state: string; streaming: boolean }[] = [];
    let streaming = true;
    try {
      const stream = await client(proxy).chat.completions.create({
        model: QWEN_MODEL,
        messages: [{ role: 'user', content: 'a long answer while the escrow settles' }],
        max_tokens: 24,
        stream: true,
      });
      const chunks = stream[Symbol.asyncIterator]();
      let text = (await chunks.next()).value?.choices[0]?.delta?.content ?? '';
      const accepted = await admin('POST', `/v1/admin/devshards/${a.id}/settle`, {
        private_key_env: 'CREATOR_KEY',
      });
      expect(accepted.status, accepted.text).toBe(202);
      const watch = (async () => {
        for (;;) {
          const state = (await admin('GET', `/v1/admin/devshards/${a.id}`)).json.state as string;
          seen.push({ state, streaming });
          if (state === 'settled') return;
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      for (let next = await chunks.next(); !next.done; next = await chunks.next()) {
        text += next.value.choices[0]?.delta?.content ?? '';
      }
      streaming = false;
      expect(text.length).toBeGreaterThan(0);
      await watch;
    } finally {
      streaming = false;
      s.devnet.model.setLatency({ perTokenMs: 0 });
    }
    const duringStream = new Set(seen.filter((x) => x.streaming).map((x) => x.state));
    expect(duringStream.has('draining')).toBe(true);
    expect([...duringStream].every((x) => x === 'active' || x === 'draining')).toBe(true);
    expect(seen.at(-1)!.state).toBe('settled');
  }, 120_000);

  it('finalize: /v1/finalize refuses two registered escrows; the per-escrow route returns one stored document', async () => {
    const two = await admin('POST', '/v1/finalize');
    expect(two.status).toBe(409);
    expect(two.json.error.message).toMatch(/exactly one registered escrow; 2 are registered/);

    const doc = await admin('POST', `/devshard/${a.id}/v1/finalize`);
    expect(doc.status, doc.text).toBe(200);
    expect(doc.json).toMatchObject({ escrow_id: String(a.id), fees: expect.anything() });
    const again = await admin('POST', `/devshard/${a.id}/v1/finalize`);
    expect(again.text).toBe(doc.text);
  }, 120_000);

  it('settle again: settled once; deposit = host payouts + fees + refund and the creator ends at before − deposits − gas + refund', async () => {
    const accepted = await admin('POST', `/v1/admin/devshards/${a.id}/settle`, {
      private_key_env: 'CREATOR_KEY',
    });
    expect(accepted.status, accepted.text).toBe(202);
    await expect
      .poll(async () => (await admin('GET', `/v1/admin/devshards/${a.id}`)).json.state, {
        timeout: 60_000,
        interval: 500,
      })
      .toBe('settled');
    const view = (await admin('GET', `/v1/admin/devshards/${a.id}`)).json;
    expect((await queryEscrow(s.chain, BigInt(a.id))).escrow?.settled).toBe(true);
    expect(
      await s.sql`select status from chain_tx_commitments where kind = 'settle_escrow' and escrow_id = ${String(a.id)}`,
    ).toEqual([{ status: 'included' }]);

    const settled = await settledEvent(s.chain, view.settle_tx_hash);
    const doc = JSON.parse((await admin('POST', `/devshard/${a.id}/v1/finalize`)).text);
    const costs = doc.host_stats.reduce(
      (sum: bigint, x: { cost: string | number }) => sum + BigInt(x.cost),
      0n,
    );
    expect(settled.fees).toBe(BigInt(doc.fees));
    expect(settled.totalPayout).toBe(costs + BigInt(doc.fees));
    expect(settled.totalPayout + settled.remainder).toBe(AMOUNT);
    expect(costs).toBeGreaterThan(0n);

    // Gas: the fee each create tx paid (settlement is fee-exempt, lifecycle.test.ts in the controller).
    const gas = (await txFee(s.chain, a.tx)) + (await txFee(s.chain, b.tx));
    expect(gas).toBeGreaterThan(0n);
    expect(s.devnet.chain.balanceOf(s.creator.address)).toBe(
      creatorBefore - 2n * AMOUNT - gas + settled.remainder,
    );
  }, 120_000);

  it('with every escrow settled or inactive chat answers 503 with Retry-After; DELETE after settle', async () => {
    await expect.poll(servingCount, { timeout: 15_000, interval: 200 }).toBe(0);
    const res = await fetch(`${proxy}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${USER_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: QWEN_MODEL, messages: [{ role: 'user', content: 'anyone?' }] }),
    });
    expect(res.status).toBe(503);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);

    const gone = await admin('DELETE', `/v1/admin/devshards/${a.id}`);
    expect(gone.status, gone.text).toBe(200);
    expect(gone.json).toEqual({ escrow_id: a.id, deleted: true });
    expect(await s.sql`select escrow_id from escrows where escrow_id = ${String(a.id)}`).toEqual([]);

    // One escrow left registered: /v1/finalize finalizes it (and answers the same document again).
    const only = await admin('POST', '/v1/finalize');
    expect(only.status, only.text).toBe(200);
    expect(only.json).toMatchObject({ escrow_id: String(b.id) });
    expect((await admin('POST', `/devshard/${b.id}/v1/finalize`)).text).toBe(only.text);
    expect((await admin('GET', `/v1/admin/devshards/${b.id}`)).json.state).toBe('finalized');
  }, 90_000);

  it('every bad admin input through the proxy: a 4xx naming the field, nothing changed in Postgres or on chain', async () => {
    const snapshot = async () => ({
      escrows:
        await s.sql`select escrow_id::text as id, state, active, signer_key_env, last_error from escrows order by escrow_id`,
      settings: await s.sql`select * from settings`,
      commitments: await s.sql`select tx_hash, status from chain_tx_commitments order by tx_hash`,
      heads:
        await s.sql`select escrow_id::text as id, last_nonce::text as nonce, finalize_document from session_heads order by escrow_id`,
      lastEscrowId: s.devnet.chain.lastEscrowId(),
      balance: s.devnet.chain.balanceOf(s.creator.address),
    });
    const before = await snapshot();
    const create = (patch: Record<string, unknown>) => ({ ...createBody(true), ...patch });
    const { private_key_env: _, ...keyless } = createBody(true);
    const cases: Array<[string, string, object | undefined, number, string]> = [
      ['POST', '/v1/admin/escrows', create({ amount: '1' }), 400, 'amount'],
      ['POST', '/v1/admin/escrows', create({ amount: '-5' }), 400, 'amount'],
      ['POST', '/v1/admin/escrows', create({ amount: (1000n * GNK).toString() }), 400, 'amount'],
      ['POST', '/v1/admin/escrows', create({ model_id: 'no/such-model' }), 400, 'model_id'],
      ['POST', '/v1/admin/escrows', create({ chain_id: 'other-chain' }), 400, 'chain_id'],
      ['POST', '/v1/admin/escrows', create({ private_key_env: 'NOT_SET_ANYWHERE' }), 400, 'private_key_env'],
      ['POST', '/v1/admin/escrows', create({ register: 'yes' }), 400, 'register'],
      ['POST', '/v1/admin/escrows', create({ colour: 'blue' }), 400, 'colour'],
      ['POST', '/v1/admin/escrows', keyless, 400, 'private_key_env'],
      [
        'POST',
        '/v1/admin/devshards',
        { escrow_id: 999_999, private_key_env: 'CREATOR_KEY' },
        404,
        'escrow_id',
      ],
      ['POST', '/v1/admin/devshards', { private_key_env: 'CREATOR_KEY' }, 400, 'escrow_id'],
      [
        'POST',
        '/v1/admin/devshards/import',
        { escrow_id: b.id, private_key_env: 'NOT_SET_ANYWHERE' },
        400,
        'private_key_env',
      ],
      ['POST', '/v1/admin/devshards/abc/activate', undefined, 400, 'id'],
      ['POST', '/v1/admin/devshards/999999/deactivate', undefined, 404, 'id'],
      [
        'POST',
        `/v1/admin/devshards/${b.id}/settle`,
        { private_key_env: 'NOT_SET_ANYWHERE' },
        400,
        'private_key_env',
      ],
      ['POST', `/v1/admin/devshards/${b.id}/settle`, {}, 400, 'private_key_env'],
      ['DELETE', '/v1/admin/devshards/abc', undefined, 400, 'id'],
      ['POST', '/v1/admin/settings', { default_request_max_tokens: -1 }, 400, 'default_request_max_tokens'],
      [
        'POST',
        '/v1/admin/settings',
        { disabled: { enabled: true, new_url: 'ftp://x' } },
        400,
        'disabled.new_url',
      ],
      [
        'POST',
        '/v1/admin/settings',
        { model_limits: [{ model_id: 'no/such-model', access_mode: 'api_key' }] },
        400,
        'model_limits[0].model_id',
      ],
      ['GET', '/v1/admin/audit?limit=-1', undefined, 400, 'limit'],
      ['POST', '/devshard/abc/v1/finalize', undefined, 400, 'id'],
    ];
    for (const [method, path, body, status, param] of cases) {
      const res = await admin(method, path, body, { 'idempotency-key': `bad-${method}-${path}` });
      const seen = { method, path, body, status: res.status, param: res.json?.error?.param };
      expect(seen).toEqual({ method, path, body, status, param });
      expect(res.json.error.message.length).toBeGreaterThan(0);
    }
    expect(await snapshot()).toEqual(before);
  }, 60_000);
});
