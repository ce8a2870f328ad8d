// /v1/admin/devshards and /v1/admin/settings against the devnet chain, real Postgres and Redis.
import { createChainClient } from '@gonka-gateway/chain';
import { GNK, MINIMAX_MODEL, QWEN_MODEL } from '@gonka-gateway/devnet';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleBlockTime } from '../chain/block-time.js';
import {
  adminHeaders,
  type ControllerHarness,
  startControllerHarness,
} from '../testing/controller-harness.js';

describe('admin devshards and settings', () => {
  let h: ControllerHarness;
  let app: FastifyInstance;
  beforeAll(async () => {
    h = await startControllerHarness();
    app = await h.build();
  });
  afterAll(async () => {
    await h?.close();
  });

  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) =>
    app.inject({ method, url, headers: adminHeaders(), ...(payload ? { payload } : {}) });
  /** An escrow on chain only (register=false), as another gateway or the CLI would leave it. */
  const onChainOnly = async (key = 'CREATOR_KEY') => {
    const res = await call('POST', '/v1/admin/escrows', {
      amount: (5n * GNK).toString(),
      model_id: QWEN_MODEL,
      chain_id: h.chainId,
      private_key_env: key,
      register: false,
    });
    expect(res.statusCode).toBe(200);
    return res.json().escrow_id as number;
  };

  it('registers an existing escrow once, refusing a foreign creator or an unknown id by field', async () => {
    const id = await onChainOnly();
    const foreign = await call('POST', '/v1/admin/devshards', {
      escrow_id: id,
      private_key_env: 'CREATOR_1_KEY',
    });
    expect(foreign.statusCode).toBe(400);
    expect(foreign.json().error).toMatchObject({ param: 'escrow_id' });
    expect(foreign.json().error.message).toMatch(/was created by/);
    const missing = await call('POST', '/v1/admin/devshards', {
      escrow_id: 999_999,
      private_key_env: 'CREATOR_KEY',
    });
    expect(missing.statusCode).toBe(404);
    expect(await h.sql`select 1 from escrows`).toHaveLength(0);

    const first = await call('POST', '/v1/admin/devshards', {
      escrow_id: id,
      private_key_env: 'CREATOR_KEY',
    });
    expect(first.statusCode).toBe(201);
    expect(first.json()).toMatchObject({
      escrow_id: id,
      state: 'active',
      active: true,
      key_source: 'env',
      private_key_env: 'CREATOR_KEY',
      nonce: '0',
      amount: (5n * GNK).toString(),
      model_id: QWEN_MODEL,
    });
    const again = await call('POST', '/v1/admin/devshards', {
      escrow_id: String(id),
      private_key_env: 'CREATOR_KEY',
    });
    expect(again.statusCode).toBe(200);

    const list = await call('GET', '/v1/admin/devshards');
    expect(list.statusCode).toBe(200);
    expect(list.json().data.map((d: { escrow_id: number }) => d.escrow_id)).toEqual([id]);
    for (const secret of Object.values(h.env)) expect(list.body).not.toContain(secret);
  });

  it('imports inactive, activates, deactivates (pool entry leaves routing at once)', async () => {
    const id = await onChainOnly();
    const imported = await call('POST', '/v1/admin/devshards/import', {
      escrow_id: id,
      private_key_env: 'CREATOR_KEY',
    });
    expect(imported.statusCode).toBe(201);
    expect(imported.json()).toMatchObject({ escrow_id: id, active: false, state: 'active' });
    const activated = await call('POST', `/v1/admin/devshards/${id}/activate`);
    expect(activated.json()).toMatchObject({ active: true });

    // An owner published the entry; deactivate flips its status before the owner's next pass.
    const keys = (await import('@gonka-gateway/shared')).redisKeys(h.redis.prefix);
    await h.redis.redis.hset(keys.poolEscrow(BigInt(id)), {
      escrow_id: String(id),
      model_id: QWEN_MODEL,
      status: 'active',
      capacity_weight: '1',
      balance_estimate: '1',
      nonce: '0',
      owner: 'replica-a',
      updated_at_ms: '1',
    });
    // Sent as many HTTP clients do: a JSON content type on a body-less request, which is no body.
    const deactivated = await app.inject({
      method: 'POST',
      url: `/v1/admin/devshards/${id}/deactivate`,
      headers: { ...adminHeaders(), 'content-type': 'application/json' },
      payload: '',
    });
    expect(deactivated.statusCode).toBe(200);
    expect(deactivated.json()).toMatchObject({
      active: false,
      pool: { status: 'inactive', owner: 'replica-a' },
    });
    expect((await call('POST', '/v1/admin/devshards/424242/deactivate')).statusCode).toBe(404);
    // Re-activated before the owner's claim pass drained it: the owner still serves, routing resumes.
    const again = await call('POST', `/v1/admin/devshards/${id}/activate`);
    expect(again.json()).toMatchObject({ active: true, pool: { status: 'active', owner: 'replica-a' } });
  });

  it('deletes only the local record, refusing while routed or with requests in flight unless forced', async () => {
    const id = await onChainOnly();
    await call('POST', '/v1/admin/devshards', { escrow_id: id, private_key_env: 'CREATOR_KEY' });
    const routed = await call('DELETE', `/v1/admin/devshards/${id}`);
    expect(routed.statusCode).toBe(409);
    expect(routed.json().error.message).toMatch(/deactivate it first/);
    await call('POST', `/v1/admin/devshards/${id}/deactivate`);
    const keys = (await import('@gonka-gateway/shared')).redisKeys(h.redis.prefix);
    await h.redis.redis.set(keys.escrowInFlight(BigInt(id)), '2');
    const busy = await call('DELETE', `/v1/admin/devshards/${id}`);
    expect(busy.statusCode).toBe(409);
    expect(busy.json().error.message).toMatch(/2 requests in flight/);
    await h.redis.redis.del(keys.escrowInFlight(BigInt(id)));
    const gone = await call('DELETE', `/v1/admin/devshards/${id}`);
    expect(gone.statusCode).toBe(200);
    expect(gone.json()).toEqual({ escrow_id: id, deleted: true });
    expect(await h.sql`select 1 from escrows where escrow_id = ${id}`).toHaveLength(0);
    // The signed record of what the escrow owes stays (session_heads has no FK to escrows).
    expect(await h.sql`select 1 from session_heads where escrow_id = ${id}`).toHaveLength(1);
    expect((await queryOnChain(id)).settled).toBe(false);

    const forced = await onChainOnly();
    await call('POST', '/v1/admin/devshards', { escrow_id: forced, private_key_env: 'CREATOR_KEY' });
    expect((await call('DELETE', `/v1/admin/devshards/${forced}?force=true`)).statusCode).toBe(200);

    const audit =
      await h.sql`select action, target, status_code from admin_audit_log where action like 'DELETE%' order by id`;
    expect(audit.map((a) => a.status_code)).toEqual([409, 409, 200, 200]);
    expect(audit[0]).toMatchObject({ action: 'DELETE /v1/admin/devshards/:id', target: String(id) });
  });

  const queryOnChain = async (id: number) => {
    const { queryEscrow } = await import('@gonka-gateway/chain');
    return (await queryEscrow(h.chain, BigInt(id))).escrow!;
  };

  it('settings: any subset, validated as a whole, revision bumped and published', async () => {
    const before = await call('GET', '/v1/admin/settings');
    expect(before.statusCode).toBe(200);
    const revision = BigInt(before.json().revision);
    const sub = h.redis.redis.duplicate();
    const keys = (await import('@gonka-gateway/shared')).redisKeys(h.redis.prefix);
    const published: string[] = [];
    await sub.subscribe(keys.settingsChanges);
    sub.on('message', (_channel, message) => published.push(message));

    const bad: Array<[object, string]> = [
      [{ request_max_tokens_cap: 10, default_request_max_tokens: 20 }, 'request_max_tokens_cap'],
      [{ default_request_max_tokens: 999_999 }, 'default_request_max_tokens'],
      [{ default_request_max_tokens: -1 }, 'default_request_max_tokens'],
      [{ model_limits: [{ model_id: 'nope/model', access_mode: 'api_key' }] }, 'model_limits[0].model_id'],
      [{ model_limits: [{ model_id: QWEN_MODEL, access_mode: 'everyone' }] }, 'model_limits[0].access_mode'],
      [{ disabled: { enabled: true, new_url: 'ftp://x' } }, 'disabled.new_url'],
      [{ disabled: { enabled: true } }, 'disabled.new_url'],
      [
        {
          escrow_rotation: {
            models: [
              {
                model_id: QWEN_MODEL,
                temp_count: 1,
                target_count: 1,
                amount: '5000000000',
                private_key_env: 'UNSET_VAR',
              },
            ],
          },
        },
        'escrow_rotation.models[0].private_key_env',
      ],
      [
        {
          escrow_rotation: {
            models: [
              {
                model_id: QWEN_MODEL,
                temp_count: -1,
                target_count: 1,
                amount: '1',
                private_key_env: 'CREATOR_KEY',
              },
            ],
          },
        },
        'escrow_rotation.models[0].temp_count',
      ],
      [{ unknown_field: 1 }, 'unknown_field'],
    ];
    for (const [payload, param] of bad) {
      const res = await call('POST', '/v1/admin/settings', payload);
      expect({ payload, status: res.statusCode }).toEqual({ payload, status: 400 });
      if (param) expect({ payload, param: res.json().error.param }).toEqual({ payload, param });
    }
    expect((await call('GET', '/v1/admin/settings')).json()).toEqual(before.json());

    const ok = await call('POST', '/v1/admin/settings', {
      model_limits: [{ model_id: MINIMAX_MODEL, access_mode: 'api_key' }],
      escrow_rotation: {
        enabled: true,
        models: [
          {
            model_id: QWEN_MODEL,
            temp_count: 1,
            target_count: 2,
            amount: 5_000_000_000,
            private_key_env: 'CREATOR_KEY',
          },
        ],
      },
      disabled: { message: 'moved' },
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({
      revision: String(revision + 1n),
      default_request_max_tokens: before.json().default_request_max_tokens,
      model_limits: [{ model_id: MINIMAX_MODEL, access_mode: 'api_key' }],
      escrow_rotation: {
        enabled: true,
        pre_poc_blocks: 300,
        models: [
          { model_id: QWEN_MODEL, temp_count: 1, target_count: 2, amount: '5000000000', settle: true },
        ],
      },
      disabled: { enabled: false, message: 'moved' },
    });
    // A later subset keeps what it does not name.
    const again = await call('POST', '/v1/admin/settings', { escrow_rotation: { enabled: false } });
    expect(again.json().escrow_rotation.models).toHaveLength(1);
    expect(again.json().revision).toBe(String(revision + 2n));
    await h.redis.redis.publish(keys.settingsChanges, 'fence');
    while (!published.includes('fence')) await new Promise((r) => setTimeout(r, 10));
    expect(published).toEqual([String(revision + 1n), String(revision + 2n), 'fence']);
    await sub.quit();
  });

  it('settings: passthrough_parameters is checked alone, stored, returned, replaced whole and audited', async () => {
    const before = (await call('GET', '/v1/admin/settings')).json();
    expect(before.passthrough_parameters).toEqual([]);
    const tooMany = Array.from({ length: 65 }, (_, i) => `p${i}`);
    const bad: Array<[unknown, string, RegExp]> = [
      [['guided_json', 'Guided-JSON'], 'passthrough_parameters[1]', /is not a parameter name/],
      [['9lives'], 'passthrough_parameters[0]', /is not a parameter name/],
      [[`a${'b'.repeat(64)}`], 'passthrough_parameters[0]', /at most 64 characters/],
      [['temperature'], 'passthrough_parameters[0]', /has a rule of the request policy/],
      [['chat_template_kwargs'], 'passthrough_parameters[0]', /always passed through/],
      [['guided_json', 'guided_json'], 'passthrough_parameters[1]', /listed twice/],
      [tooMany, 'passthrough_parameters', /at most 64/],
      [[42], 'passthrough_parameters[0]', /string/],
      ['guided_json', 'passthrough_parameters', /array/],
    ];
    for (const [list, param, message] of bad) {
      const res = await call('POST', '/v1/admin/settings', { passthrough_parameters: list });
      expect({ list, status: res.statusCode }).toEqual({ list, status: 400 });
      expect(res.json().error).toMatchObject({ code: 'invalid_request', param, message });
    }
    expect((await call('GET', '/v1/admin/settings')).json()).toEqual(before);

    const names = ['guided_json', 'min_tokens'];
    const set = await call('POST', '/v1/admin/settings', { passthrough_parameters: names });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json()).toMatchObject({
      revision: String(BigInt(before.revision) + 1n),
      passthrough_parameters: names,
      model_limits: before.model_limits,
    });
    expect((await call('GET', '/v1/admin/settings')).json()).toEqual(set.json());
    const [stored] = await h.sql<{ list: unknown }[]>`select passthrough_parameters as list from settings`;
    expect(stored!.list).toEqual(names);
    const [audit] = await h.sql<{ request: unknown; status_code: number }[]>`
      select request, status_code from admin_audit_log where action = 'POST /v1/admin/settings'
       order by id desc limit 1`;
    expect(audit).toEqual({ request: { passthrough_parameters: names }, status_code: 200 });

    // A change of another field keeps the list; a list sent replaces it whole; [] clears it.
    const other = await call('POST', '/v1/admin/settings', { disabled: { message: 'kept' } });
    expect(other.json().passthrough_parameters).toEqual(names);
    const replaced = await call('POST', '/v1/admin/settings', { passthrough_parameters: ['top_a'] });
    expect(replaced.json().passthrough_parameters).toEqual(['top_a']);
    const cleared = await call('POST', '/v1/admin/settings', { passthrough_parameters: [] });
    expect(cleared.json().passthrough_parameters).toEqual([]);
    expect(cleared.json().revision).toBe(String(BigInt(before.revision) + 4n));
  });

  it('settings: a bridge window (pre_poc_blocks × block time) shorter than one tick is refused with the arithmetic', async () => {
    const ctx = h.context();
    const before = (await call('GET', '/v1/admin/settings')).json();
    // No block time estimate yet: nothing to judge by, nothing refused.
    const blind = await call('POST', '/v1/admin/settings', {
      escrow_rotation: { enabled: true, pre_poc_blocks: 1 },
    });
    expect(blind.statusCode, blind.body).toBe(200);
    // The chain-phase job's samples: 40 blocks in 10 s = 250 ms a block.
    await sampleBlockTime(ctx, 1_000n, 5_000_000);
    expect(await sampleBlockTime(ctx, 1_040n, 5_010_000)).toMatchObject({ msPerBlock: 250 });
    const short = await call('POST', '/v1/admin/settings', { escrow_rotation: { pre_poc_blocks: 40 } });
    expect(short.statusCode).toBe(400);
    expect(short.json().error).toMatchObject({
      param: 'escrow_rotation.pre_poc_blocks',
      code: 'invalid_request',
    });
    expect(short.json().error.message).toBe(
      "escrow_rotation.pre_poc_blocks 40 × ~250 ms a block (the controller's block time estimate over the last 40 blocks) = 10.0 s, shorter than one rotation tick (GATEWAY_ROTATION_TICK_MS 15000 ms): the bridge stage could pass between two ticks; use at least 60 blocks or a shorter tick",
    );
    // Switching rotation on with the short window stored is refused the same way.
    await call('POST', '/v1/admin/settings', { escrow_rotation: { enabled: false } });
    const on = await call('POST', '/v1/admin/settings', { escrow_rotation: { enabled: true } });
    expect(on.statusCode).toBe(400);
    const enough = await call('POST', '/v1/admin/settings', {
      escrow_rotation: { enabled: true, pre_poc_blocks: 60 },
    });
    expect(enough.statusCode, enough.body).toBe(200);
    // Other changes never trip over it.
    const other = await call('POST', '/v1/admin/settings', { disabled: { message: 'still fine' } });
    expect(other.statusCode, other.body).toBe(200);
    await call('POST', '/v1/admin/settings', {
      escrow_rotation: before.escrow_rotation,
      disabled: before.disabled,
    });
    await h.redis.redis.del(ctx.keys.chainBlockTime);
  });

  it('settings: a node that cannot answer the model check is 502 chain_error, and nothing changes', async () => {
    // Nothing listens on port 9 of this host: every chain read fails as a transient node error.
    const dark = createChainClient({ chainRest: 'http://127.0.0.1:9', publicApi: 'http://127.0.0.1:9' });
    const darkApp = await h.build({ chain: dark });
    const before = (await call('GET', '/v1/admin/settings')).json();
    const res = await darkApp.inject({
      method: 'POST',
      url: '/v1/admin/settings',
      headers: adminHeaders(),
      payload: { model_limits: [{ model_id: QWEN_MODEL, access_mode: 'admin_only' }] },
    });
    expect(res.statusCode, res.body).toBe(502);
    expect(res.json()).toEqual({
      error: {
        message: expect.stringMatching(/nothing was changed/),
        type: 'api_error',
        param: null,
        code: 'chain_error',
      },
    });
    expect(res.body).not.toContain('127.0.0.1');
    expect((await call('GET', '/v1/admin/settings')).json()).toEqual(before);
    // Its create worker must not take the other tests' create jobs.
    await darkApp.close();
  });

  it('registers DEVSHARDS_JSON escrows on the first start only, skipping an entry it cannot register', async () => {
    const a = await onChainOnly();
    const b = await onChainOnly();
    const foreign = await onChainOnly('CREATOR_1_KEY');
    const json = JSON.stringify([
      { escrow_id: a, model_id: QWEN_MODEL },
      { escrow_id: String(b), active: false, private_key_env: 'CREATOR_KEY' },
      { escrow_id: foreign },
    ]);
    const rows = () =>
      h.sql`select escrow_id::int as id, active from escrows where escrow_id in (${a}, ${b}, ${foreign}) order by escrow_id`;
    // A restart (settings row already there) registers nothing.
    await h.build({ config: { DEVSHARDS_JSON: json }, firstStart: false });
    expect(await rows()).toEqual([]);
    await h.build({ config: { DEVSHARDS_JSON: json }, firstStart: true });
    expect(await rows()).toEqual([
      { id: a, active: true },
      { id: b, active: false },
    ]);
  });

  it('serves an OpenAPI document generated from the route schemas, and the Swagger UI at /docs (offline assets)', async () => {
    const res = await app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    const create = doc.paths['/v1/admin/escrows'].post;
    expect(create.security).toEqual([{ adminKey: [] }]);
    expect(create.requestBody.content['application/json'].schema.required).toEqual([
      'amount',
      'model_id',
      'chain_id',
    ]);
    expect(create.parameters).toContainEqual(
      expect.objectContaining({ name: 'idempotency-key', in: 'header' }),
    );
    expect(create.responses['200'].content['application/json'].schema.required).toContain('escrow_id');
    expect(doc.paths['/v1/admin/devshards/{id}/settle'].post.parameters).toContainEqual(
      expect.objectContaining({ name: 'id', in: 'path', required: true }),
    );
    for (const path of [
      '/v1/admin/devshards',
      '/v1/admin/settings',
      '/devshard/{id}/v1/finalize',
      '/v1/debug/rotation',
      '/v1/admin/audit',
    ]) {
      expect(Object.keys(doc.paths)).toContain(path);
    }
    expect(Object.keys(doc.paths).some((p) => p.includes('//'))).toBe(false);
    expect(doc.paths['/internal/health'].get.security).toBeUndefined();
    // The UI and everything it loads come from the controller itself (no CDN).
    const index = await app.inject({ method: 'GET', url: '/docs' });
    expect(index.statusCode).toBe(200);
    expect(index.headers['content-type']).toMatch(/text\/html/);
    expect(index.body).toContain('swagger-ui');
    expect(index.body).not.toMatch(/https?:\/\/(?!127\.0\.0\.1|localhost)/);
    const bundle = await app.inject({ method: 'GET', url: '/docs/static/swagger-ui-bundle.js' });
    expect(bundle.statusCode).toBe(200);
    expect(bundle.body.length).toBeGreaterThan(100_000);
    const served = await app.inject({ method: 'GET', url: '/docs/json' });
    expect(served.json()).toEqual(doc);
  });
});
