// A registered escrow serves as soon as its registration is announced, not on a later claim pass:
// the controller publishes the escrow on `pool:changes`, a proxy replica claims it on that message
// (escrow-runtime claim/claim-loop.ts) and every replica's pool snapshot reads the new owner at once
// (apps/proxy ownership/pool-snapshot.ts). `wait_until_serving` makes the admin answer wait for that.
// The stack runs a 60 s lease TTL: claim passes every 20 s, an unowned escrow overdue after 60 s, so
// within the generous waits below only the announcement can make an escrow serve.
import { GNK, MINIMAX_MODEL, QWEN_MODEL } from '@gonka-gateway/devnet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, adminCall, type Stack, startStack } from './stack.js';

const AMOUNT = 5n * GNK;

describe('a registered escrow serves on its announcement', () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack({ env: { GATEWAY_LEASE_TTL_MS: '60000' } });
  }, 120_000);
  afterAll(async () => {
    await s?.close();
  }, 60_000);

  const admin = (method: string, path: string, body?: object) =>
    adminCall(s.proxyUrls[0], method, path, body);
  const createBody = (model: string, extra: object = {}) => ({
    amount: AMOUNT.toString(),
    model_id: model,
    chain_id: s.chainId,
    private_key_env: 'CREATOR_KEY',
    ...extra,
  });
  const chat = async (url: string, model: string) => {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }], max_tokens: 8 }),
      signal: AbortSignal.timeout(30_000),
    });
    await res.text();
    return res.status;
  };
  const pool = async (id: number) => (await admin('GET', `/v1/admin/devshards/${id}`)).json.pool;

  it('POST /v1/admin/escrows with wait_until_serving answers once a replica serves it; every replica routes it', async () => {
    const created = await admin(
      'POST',
      '/v1/admin/escrows',
      createBody(QWEN_MODEL, { register: true, wait_until_serving: true }),
    );
    expect(created.status, created.text).toBe(200);
    expect(created.json).toMatchObject({ registered: true, serving: true, escrow_id: expect.any(Number) });
    expect(await pool(created.json.escrow_id)).toMatchObject({ status: 'active', owner: expect.any(String) });
    // The first chat after the answer is served, on the owner and on the replica that forwards.
    expect(await Promise.all(s.proxyUrls.map((url) => chat(url, QWEN_MODEL)))).toEqual([200, 200]);
  });

  it('without waiting, a newly registered escrow of a new model serves within seconds, not a claim pass', async () => {
    const created = await admin('POST', '/v1/admin/escrows', createBody(MINIMAX_MODEL, { register: true }));
    expect(created.status, created.text).toBe(200);
    expect(created.json).not.toHaveProperty('serving');
    for (const url of s.proxyUrls) {
      await expect.poll(() => chat(url, MINIMAX_MODEL), { timeout: 10_000, interval: 50 }).toBe(200);
    }
  });

  it('POST /v1/admin/devshards with wait_until_serving answers serving; an inactive import answers false at once', async () => {
    const onChain = async () => {
      const res = await admin('POST', '/v1/admin/escrows', createBody(QWEN_MODEL, { register: false }));
      expect(res.status, res.text).toBe(200);
      return res.json.escrow_id as number;
    };
    const registered = await admin('POST', '/v1/admin/devshards', {
      escrow_id: await onChain(),
      private_key_env: 'CREATOR_KEY',
      wait_until_serving: true,
    });
    expect(registered.status, registered.text).toBe(201);
    expect(registered.json).toMatchObject({
      state: 'active',
      active: true,
      serving: true,
      pool: { status: 'active', owner: expect.any(String) },
    });

    // Imported inactive: never claimed, so the answer does not wait for the 30 s bound.
    const imported = await admin('POST', '/v1/admin/devshards/import', {
      escrow_id: await onChain(),
      private_key_env: 'CREATOR_KEY',
      wait_until_serving: true,
    });
    expect(imported.status, imported.text).toBe(201);
    expect(imported.json).toMatchObject({ active: false, serving: false, pool: null });
  });
});
