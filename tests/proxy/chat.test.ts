// The proxy end to end, one replica in this process on the devnet: the official openai client against
// the proxy, streaming and not; tool calls, structured output and logprobs (the devnet's mock model
// answers them as a served model does); every 4xx has the OpenAI shape and takes no nonce; access modes,
// max_tokens, admission, disabled mode, /v1/models, /v1/status, /healthz, /readyz; a client that
// leaves before the first byte, mid-stream or after the last chunk leaves the session consistent
// with the Finish folded in; a cut stream and a tampered Finish are counted by served-bytes verdict.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ReplicaDirectory } from '@gonka-gateway/escrow-runtime';
import { liftQuarantine } from '@gonka-gateway/shared';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerOf } from '../devshard-devnet/ledger.js';
import type { StatusBody } from './proxy-stack.js';
import {
  ADMIN_KEY,
  type InProcessReplica,
  ProxyStack,
  QWEN_MODEL,
  USER_KEY,
  waitFor,
} from './proxy-stack.js';

let stack: ProxyStack;
let replica: InProcessReplica;
/** Stands in for the controller: answers every request with what it received. */
let controller: Server;
const controllerSaw: { method: string; url: string; body: string; auth: string | undefined }[] = [];

beforeAll(async () => {
  controller = createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    const seen = {
      method: req.method ?? '',
      url: req.url ?? '',
      body: Buffer.concat(parts).toString('utf8'),
      auth: req.headers.authorization,
    };
    controllerSaw.push(seen);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ controller: true, method: seen.method, url: seen.url, body: seen.body }));
  });
  controller.listen(0, '127.0.0.1');
  await once(controller, 'listening');
  const controllerUrl = `http://127.0.0.1:${(controller.address() as AddressInfo).port}`;
  stack = await ProxyStack.start(2);
  // Settings re-read only every minute: a change within the tests' 2 s arrives by pub/sub.
  replica = await stack.startInProcess(
    'solo',
    { GATEWAY_MAX_CONCURRENT_REQUESTS: '3', GATEWAY_CONTROLLER_URL: controllerUrl },
    { settingsRefreshMs: 60_000 },
  );
  await waitFor('both escrows owned', async () => (await stack.ownedBy(replica)).length === 2);
}, 90_000);

afterAll(async () => {
  await stack?.close();
  controller?.close();
});

const messages = [{ role: 'user' as const, content: 'Tell me about fencing tokens' }];

/**
 * A test that puts a fault on the next nonce's executor needs that host served, not skipped: an
 * earlier test's fault may have quarantined it (serve/host-health.ts). The replica adopts the lift
 * within its 1 s host-health sync.
 */
async function liftEveryQuarantine(): Promise<void> {
  for (const host of new Set(stack.escrows.flatMap((e) => e.slots))) {
    await liftQuarantine(stack.redis.redis, stack.keys, host);
  }
}

describe('chat completions through the proxy', () => {
  it('answers a non-streamed completion with usage', async () => {
    const before = await stack.startedInferences();
    const completion = await stack.client(replica).chat.completions.create({
      model: QWEN_MODEL,
      messages,
      max_tokens: 64,
    });
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0]?.message.content?.length).toBeGreaterThan(0);
    expect(completion.usage?.completion_tokens).toBeGreaterThan(0);
    expect(await stack.startedInferences()).toBeGreaterThan(before);
  });

  it('streams chunks and ends with [DONE]', async () => {
    const stream = await stack.client(replica).chat.completions.create({
      model: QWEN_MODEL,
      messages,
      max_tokens: 64,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(usage?.completion_tokens).toBeGreaterThan(0);
  });
});

describe('tools, structured output and logprobs through the proxy', () => {
  const tools: OpenAI.ChatCompletionTool[] = [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        parameters: {
          type: 'object',
          properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1, maximum: 3 } },
          required: ['city', 'days'],
          additionalProperties: false,
        },
      },
    },
  ];

  it('a tool call comes back whole, non-streamed (assembled from the host stream) and streamed', async () => {
    const client = stack.client(replica);
    const completion = await client.chat.completions.create({
      model: QWEN_MODEL,
      messages,
      tools,
      max_tokens: 64,
    });
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    const call = choice.message.tool_calls?.[0];
    expect(call?.type).toBe('function');
    if (call?.type !== 'function') throw new Error('no function call');
    expect(call.id).toMatch(/^call_/);
    expect(call.function.name).toBe('get_weather');
    const args = JSON.parse(call.function.arguments) as { city: unknown; days: number };
    expect(typeof args.city).toBe('string');
    expect(args.days).toBeGreaterThanOrEqual(1);

    // The SDK's stream helper reassembles the deltas into the same message.
    const stream = client.chat.completions.stream({ model: QWEN_MODEL, messages, tools, max_tokens: 64 });
    const streamed = await stream.finalChatCompletion();
    const streamedCall = streamed.choices[0]?.message.tool_calls?.[0];
    if (streamedCall?.type !== 'function') throw new Error('no streamed function call');
    expect(streamed.choices[0]?.finish_reason).toBe('tool_calls');
    expect(streamedCall.function.name).toBe('get_weather');
    expect(JSON.parse(streamedCall.function.arguments)).toEqual(args);

    // The tool's result goes back; the answer is text.
    const answer = await client.chat.completions.create({
      model: QWEN_MODEL,
      tools,
      max_tokens: 64,
      messages: [
        ...messages,
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: 'sunny, 21 °C' },
      ],
    });
    expect(answer.choices[0]?.finish_reason).toBe('stop');
    expect(answer.choices[0]?.message.content?.length).toBeGreaterThan(0);
  });

  it('logprobs come back per token, non-streamed and streamed, with the top_logprobs asked', async () => {
    const client = stack.client(replica);
    const completion = await client.chat.completions.create({
      model: QWEN_MODEL,
      messages,
      max_tokens: 16,
      logprobs: true,
      top_logprobs: 2,
    });
    const content = completion.choices[0]?.logprobs?.content ?? [];
    expect(content.length).toBe(completion.usage?.completion_tokens);
    expect(content.map((t) => t.token).join('')).toBe(completion.choices[0]?.message.content);
    for (const t of content) expect(t.top_logprobs).toHaveLength(2);

    const stream = await client.chat.completions.create({
      model: QWEN_MODEL,
      messages,
      max_tokens: 16,
      logprobs: true,
      top_logprobs: 1,
      stream: true,
    });
    let text = '';
    let tokens = '';
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      for (const t of chunk.choices[0]?.logprobs?.content ?? []) {
        tokens += t.token;
        expect(t.top_logprobs).toHaveLength(1);
      }
    }
    expect(tokens).toBe(text);
  });

  it('a json_schema response_format gets JSON content', async () => {
    const completion = await stack.client(replica).chat.completions.create({
      model: QWEN_MODEL,
      messages,
      max_tokens: 64,
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'person',
          strict: true,
          schema: {
            type: 'object',
            properties: { name: { type: 'string' }, age: { type: 'integer' } },
            required: ['name', 'age'],
            additionalProperties: false,
          },
        },
      },
    });
    const value = JSON.parse(completion.choices[0]?.message.content ?? '') as { name: unknown; age: unknown };
    expect(typeof value.name).toBe('string');
    expect(Number.isInteger(value.age)).toBe(true);
  });
});

interface Sent {
  status: number;
  headers: Headers;
  text: string;
  json: () => { error: { message: string; type: string; param: string | null; code: string } };
}

async function post(
  path: string,
  body: string | Buffer,
  headers: Record<string, string> = {},
): Promise<Sent> {
  const res = await fetch(`${replica.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json', ...headers },
    body,
    redirect: 'manual',
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) };
}

const chat = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: QWEN_MODEL, messages, max_tokens: 64, ...extra });

/** The maxTokens of the newest StartInference over both escrows (what the session reserved). */
async function lastReservedMaxTokens(): Promise<bigint | undefined> {
  let newest: { at: number; maxTokens: bigint } | undefined;
  for (const escrow of stack.escrows) {
    const diffs = await stack.storedDiffs(escrow.id);
    for (const d of diffs) {
      for (const { tx } of d.diff.txs) {
        if (tx.kind !== 'startInference') continue;
        const at = Number(tx.msg.startedAt);
        if (!newest || at >= newest.at) newest = { at, maxTokens: tx.msg.maxTokens };
      }
    }
  }
  return newest?.maxTokens;
}

describe('requests refused before any nonce is taken', () => {
  const cases: [string, () => Promise<Sent>, number, string][] = [
    ['no key', () => post('/v1/chat/completions', chat(), { authorization: '' }), 401, 'missing_api_key'],
    [
      'an unknown key',
      () => post('/v1/chat/completions', chat(), { authorization: `Bearer sk-${'00'.repeat(24)}` }),
      401,
      'invalid_api_key',
    ],
    ['malformed JSON', () => post('/v1/chat/completions', '{"model": '), 400, 'invalid_json'],
    [
      'messages of the wrong type',
      () => post('/v1/chat/completions', chat({ messages: 'hi' })),
      400,
      'invalid_request',
    ],
    [
      'no messages',
      () => post('/v1/chat/completions', JSON.stringify({ model: QWEN_MODEL })),
      400,
      'invalid_request',
    ],
    [
      'max_tokens of the wrong type',
      () => post('/v1/chat/completions', chat({ max_tokens: '64' })),
      400,
      'invalid_request',
    ],
    ['n > 1', () => post('/v1/chat/completions', chat({ n: 2 })), 400, 'invalid_request'],
    [
      'a body over the limit',
      () => post('/v1/chat/completions', chat({ pad: 'x'.repeat(4 * 1024 * 1024 + 10) })),
      413,
      'body_too_large',
    ],
    [
      'a non-JSON content type',
      () => post('/v1/chat/completions', chat(), { 'content-type': 'text/plain' }),
      415,
      'unsupported_media_type',
    ],
    [
      'an unknown model',
      () => post('/v1/chat/completions', chat({ model: 'no/such-model' })),
      404,
      'model_not_found',
    ],
    [
      'a user key on an admin_only model',
      () => post('/v1/chat/completions', chat(), { authorization: `Bearer ${USER_KEY}` }),
      401,
      'admin_key_required',
    ],
    [
      'an escrow the gateway does not know',
      () => post('/devshard/999999/v1/chat/completions', chat()),
      404,
      'escrow_not_found',
    ],
  ];

  it.each(cases)('%s', async (_what, send, status, code) => {
    const before = await stack.startedInferences();
    const res = await send();
    expect(res.status).toBe(status);
    const body = res.json();
    expect(body.error).toMatchObject({ code, type: expect.any(String), message: expect.any(String) });
    expect(body.error).toHaveProperty('param');
    expect(res.headers.get('x-request-id')).toBeTruthy();
    if (code === 'admin_key_required') expect(body.error.message).toContain('admin API key is required');
    expect(await stack.startedInferences()).toBe(before);
  });

  it('the openai client sees the same errors as typed exceptions', async () => {
    await expect(
      stack.client(replica).chat.completions.create({ model: 'no/such-model', messages }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(
      stack.client(replica, USER_KEY).chat.completions.create({ model: QWEN_MODEL, messages }),
    ).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });
});

describe('policy from the settings', () => {
  it('admin_only refuses a user key; api_key lets it in; /v1/models follows', async () => {
    const user = stack.client(replica, USER_KEY);
    expect((await user.models.list()).data).toEqual([]);
    expect((await stack.client(replica).models.list()).data.map((m) => m.id)).toEqual([QWEN_MODEL]);
    // One model by id (its slash taken as it comes or percent-encoded); 404 for one the key may not use.
    const listed = (await stack.client(replica).models.list()).data[0];
    expect(await stack.client(replica).models.retrieve(QWEN_MODEL)).toEqual(listed);
    const encoded = await fetch(`${replica.url}/v1/models/${encodeURIComponent(QWEN_MODEL)}`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    expect(await encoded.json()).toEqual(listed);
    await expect(user.models.retrieve(QWEN_MODEL)).rejects.toMatchObject({
      status: 404,
      code: 'model_not_found',
    });
    await expect(stack.client(replica).models.retrieve('no/such-model')).rejects.toMatchObject({
      status: 404,
    });

    await stack.updateSettings({ modelLimits: [{ model_id: QWEN_MODEL, access_mode: 'api_key' }] });
    await expect
      .poll(async () => (await user.models.list()).data.map((m) => m.id), { timeout: 2_000, interval: 50 })
      .toEqual([QWEN_MODEL]);
    const completion = await user.chat.completions.create({ model: QWEN_MODEL, messages, max_tokens: 64 });
    expect(completion.choices[0]?.message.content?.length).toBeGreaterThan(0);

    await stack.updateSettings({ modelLimits: [] });
    await expect
      .poll(() =>
        user.chat.completions.create({ model: QWEN_MODEL, messages }).then(
          () => 'served',
          (e) => e.status,
        ),
      )
      .toBe(401);
  });

  it('max_tokens: the default when absent, the cap (said in a header) when above it', async () => {
    const absent = await post('/v1/chat/completions', JSON.stringify({ model: QWEN_MODEL, messages }));
    expect(absent.status).toBe(200);
    expect(absent.headers.get('x-max-tokens-capped')).toBeNull();
    expect(await lastReservedMaxTokens()).toBe(96n);

    const above = await post('/v1/chat/completions', chat({ max_tokens: 5_000 }));
    expect(above.status).toBe(200);
    expect(above.headers.get('x-max-tokens-capped')).toBe('128');
    expect(await lastReservedMaxTokens()).toBe(128n);

    const within = await post('/v1/chat/completions', chat({ max_tokens: 100 }));
    expect(within.status).toBe(200);
    expect(await lastReservedMaxTokens()).toBe(100n);
  });
});

describe('admission across the fleet', () => {
  it('429 with Retry-After at the concurrency limit; entries of a dead replica expire on their own', async () => {
    const r = stack.redis.redis;
    const soon = Date.now() + 1_500;
    // Three requests admitted by a replica that died (nobody refreshes them).
    await r.zadd(stack.keys.admissionRequests, soon, 'dead-1', soon, 'dead-2', soon, 'dead-3');
    await r.hset(stack.keys.admissionTokens, { 'dead-1': 10, 'dead-2': 10, 'dead-3': 10 });
    const before = await stack.startedInferences();
    const refused = await post('/v1/chat/completions', chat());
    expect(refused.status).toBe(429);
    expect(refused.json().error.code).toBe('capacity_exceeded');
    expect(refused.headers.get('retry-after')).toBeTruthy();
    expect(refused.headers.get('x-should-retry')).toBe('true');
    expect(await stack.startedInferences()).toBe(before);
    await expect
      .poll(async () => (await post('/v1/chat/completions', chat())).status, {
        timeout: 5_000,
        interval: 200,
      })
      .toBe(200);
    expect(await r.hlen(stack.keys.admissionTokens)).toBe(0);
  });
});

describe('disabled mode', () => {
  it('308 with the new URL for clients; admin routes keep working with the admin key', async () => {
    await stack.updateSettings({
      disabled: { enabled: true, message: 'we moved', new_url: 'https://new.example/v1' },
    });
    await expect
      .poll(async () => (await post('/v1/chat/completions', chat())).status, { timeout: 2_000, interval: 50 })
      .toBe(308);
    const redirected = await post('/v1/chat/completions', chat(), { authorization: `Bearer ${USER_KEY}` });
    expect(redirected.status).toBe(308);
    expect(redirected.headers.get('location')).toBe('https://new.example/v1');
    expect(JSON.parse(redirected.text)).toEqual({
      status: 'disabled',
      message: 'we moved',
      new_url: 'https://new.example/v1',
    });
    const models = await fetch(`${replica.url}/v1/models`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
      redirect: 'manual',
    });
    expect(models.status).toBe(308);

    const admin = await post('/v1/admin/settings', '{"disabled":{"enabled":false}}');
    expect(admin.status).toBe(200);
    expect(JSON.parse(admin.text)).toMatchObject({
      controller: true,
      method: 'POST',
      url: '/v1/admin/settings',
    });
    expect(controllerSaw.at(-1)).toMatchObject({
      body: '{"disabled":{"enabled":false}}',
      auth: `Bearer ${ADMIN_KEY}`,
    });
    const userOnAdmin = await post('/v1/admin/settings', '{}', { authorization: `Bearer ${USER_KEY}` });
    expect(userOnAdmin.status).toBe(308);

    await stack.updateSettings({ disabled: { enabled: false, message: '', new_url: null } });
    await expect
      .poll(async () => (await post('/v1/chat/completions', chat())).status, { timeout: 2_000, interval: 50 })
      .toBe(200);
  });
});

describe('forwarding to the controller', () => {
  it('admin, debug and finalize routes reach the controller; an empty finalize id is 404 with no body', async () => {
    const get = await fetch(`${replica.url}/v1/admin/devshards`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    expect(await get.json()).toMatchObject({ controller: true, method: 'GET', url: '/v1/admin/devshards' });
    const debug = await fetch(`${replica.url}/v1/debug/rotation`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    expect(await debug.json()).toMatchObject({ url: '/v1/debug/rotation' });
    const del = await fetch(`${replica.url}/v1/admin/devshards/7`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    expect(await del.json()).toMatchObject({ method: 'DELETE', url: '/v1/admin/devshards/7' });
    const fin = await post('/devshard/7/v1/finalize', '');
    expect(JSON.parse(fin.text)).toMatchObject({ url: '/devshard/7/v1/finalize' });
    const empty = await post('/devshard//v1/finalize', '');
    expect(empty.status).toBe(404);
    expect(empty.text).toBe('');
  });
});

describe('status and health', () => {
  it('/v1/status shows the fleet without credentials; /healthz and /readyz answer', async () => {
    const res = await fetch(`${replica.url}/v1/status`);
    expect(res.status).toBe(200);
    const text = await res.text();
    const status = JSON.parse(text);
    expect(status.runtimes).toHaveLength(2);
    expect(status.capacity.models[QWEN_MODEL]).toMatchObject({ escrows: 2, active: 2 });
    expect(status.devshards).toHaveLength(2);
    for (const d of status.devshards) {
      expect(d).toMatchObject({ status: 'active', owner: replica.replicaId, limiter: { in_flight: 0 } });
      expect(BigInt(d.balance_estimate)).toBeGreaterThan(0n);
    }
    expect(status.replicas).toEqual([expect.objectContaining({ id: replica.replicaId, escrows_owned: 2 })]);
    expect(status.limiter).toMatchObject({ max_concurrent_requests: 3 });
    expect(typeof status.active_requests).toBe('number');
    expect(text).not.toContain(ADMIN_KEY);
    expect(text).not.toContain(stack.gateway.creator.key.exportHex());
    expect((await fetch(`${replica.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${replica.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ checks: { postgres: true, redis: true, pool: true } });
    const metrics = await (await fetch(`${replica.url}/metrics`)).text();
    expect(metrics).toMatch(
      /devshard_gateway_requests_total\{route="pooled",model="[^"]+",status="200"\} \d+/,
    );
    expect(metrics).toMatch(/devshard_gateway_leases_held 2/);
    expect(metrics).toMatch(/devshard_gateway_escrow_nonce\{escrow_id="\d+"\} \d+/);
  });

  it('serves one named escrow on /devshard/{id}/v1/chat/completions', async () => {
    const escrow = stack.escrows[1]!;
    const before = (await stack.storedDiffs(escrow.id)).length;
    const client = new OpenAI({
      apiKey: ADMIN_KEY,
      baseURL: `${replica.url}/devshard/${escrow.id}/v1`,
      maxRetries: 0,
    });
    const completion = await client.chat.completions.create({ model: QWEN_MODEL, messages, max_tokens: 64 });
    expect(completion.choices[0]?.message.content?.length).toBeGreaterThan(0);
    expect((await stack.storedDiffs(escrow.id)).length).toBeGreaterThan(before);
  });
});

describe('a client that goes away', () => {
  /** Every inference any escrow started is finished in the stored diffs (its Finish folded in). */
  async function unfinished(): Promise<string[]> {
    const open: string[] = [];
    for (const escrow of stack.escrows) {
      const ledger = ledgerOf(escrow.row, await stack.storedDiffs(escrow.id));
      for (const [nonce, e] of ledger.inferences)
        if (e.fate !== 'finished') open.push(`${escrow.id}/${nonce}:${e.fate}`);
    }
    return open;
  }

  async function streamThenLeave(
    leave: 'before-first-byte' | 'mid-stream' | 'after-last-chunk',
  ): Promise<number> {
    const abort = new AbortController();
    let chunks = 0;
    const request = stack
      .client(replica)
      .chat.completions.create(
        { model: QWEN_MODEL, messages, max_tokens: 64, stream: true },
        { signal: abort.signal },
      );
    if (leave === 'before-first-byte') setTimeout(() => abort.abort(), 5);
    try {
      const stream = await request;
      for await (const chunk of stream) {
        chunks++;
        if (leave === 'mid-stream' && chunks === 3) abort.abort();
        if (leave === 'after-last-chunk' && chunk.choices[0]?.finish_reason) abort.abort();
      }
    } catch (error) {
      expect(error).toBeInstanceOf(OpenAI.APIUserAbortError);
    }
    return chunks;
  }

  it.each(['before-first-byte', 'mid-stream', 'after-last-chunk'] as const)(
    'leaving %s keeps the session consistent and the Finish folded in',
    async (leave) => {
      stack.gateway.devnet.model.setLatency({ perTokenMs: 15 });
      try {
        const chunks = await streamThenLeave(leave);
        if (leave === 'mid-stream') expect(chunks).toBe(3);
      } finally {
        stack.gateway.devnet.model.setLatency({ perTokenMs: 0 });
      }
      await expect.poll(unfinished, { timeout: 10_000, interval: 100 }).toEqual([]);
      // The escrows keep serving.
      const next = await stack
        .client(replica)
        .chat.completions.create({ model: QWEN_MODEL, messages, max_tokens: 64 });
      expect(next.choices[0]?.message.content?.length).toBeGreaterThan(0);
      await expect.poll(unfinished, { timeout: 10_000, interval: 100 }).toEqual([]);
    },
  );
});

describe('a host that fails before the first byte', () => {
  it('the request succeeds on the retry with a new nonce', async () => {
    const escrow = stack.escrows[0]!;
    // Let idle flushes settle, so the next nonce is known.
    await liftEveryQuarantine();
    await new Promise((r) => setTimeout(r, 1_000));
    const status = (await (await fetch(`${replica.url}/v1/status`)).json()) as StatusBody;
    const runtime = status.runtimes.find((r) => r.escrow_id === escrow.id.toString())!;
    const next = BigInt(runtime.nonce ?? 0) + 1n;
    const host = escrow.slots[Number(next % BigInt(escrow.slots.length))]!;
    await stack.gateway.devnet.devshardHosts.setFault(host, {
      mode: 'unavailable',
      devshardError: 'requests_disabled',
      remaining: 1,
    });
    const retriesBefore = await retries();
    const res = await post(`/devshard/${escrow.id}/v1/chat/completions`, chat({ stream: true }));
    expect(res.status).toBe(200);
    expect(res.text).toContain('data: [DONE]');
    expect(res.text).not.toContain('"error"');
    expect(await retries()).toBe(retriesBefore + 1);
    const starts = (await stack.storedDiffs(escrow.id)).filter(
      (d) => d.nonce >= next && d.diff.txs.some(({ tx }) => tx.kind === 'startInference'),
    );
    // The refused attempt took `next`; the retry took a later nonce (an owner's idle flush may take
    // the one in between, so only the order is certain).
    expect(starts[0]?.nonce).toBe(next);
    expect(starts[1]!.nonce).toBeGreaterThan(next);
  });

  async function retries(): Promise<number> {
    const text = await (await fetch(`${replica.url}/metrics`)).text();
    return Number(/^devshard_gateway_retries_total (\d+)$/m.exec(text)?.[1] ?? 0);
  }
});

describe('after the headers are sent', () => {
  it('a host cut mid-stream ends the stream with one error frame and [DONE]', async () => {
    const escrow = stack.escrows[1]!;
    await liftEveryQuarantine();
    await new Promise((r) => setTimeout(r, 1_000));
    const status = (await (await fetch(`${replica.url}/v1/status`)).json()) as StatusBody;
    const runtime = status.runtimes.find((r) => r.escrow_id === escrow.id.toString())!;
    const next = BigInt(runtime.nonce ?? 0) + 1n;
    const host = escrow.slots[Number(next % BigInt(escrow.slots.length))]!;
    const truncated = await verdicts('truncated');
    await stack.gateway.devnet.devshardHosts.setFault(host, {
      mode: 'cut-stream',
      cutAfterFrames: 2,
      remaining: 1,
    });
    const res = await post(`/devshard/${escrow.id}/v1/chat/completions`, chat({ stream: true }));
    expect(res.status).toBe(200);
    const events = res.text.split('\n\n').filter((e) => e !== '');
    expect(events.length).toBeGreaterThanOrEqual(2);
    expect(events.at(-1)).toBe('data: [DONE]');
    const last = events.at(-2)!;
    expect(last).toMatch(/^data: \{"error":/);
    expect(JSON.parse(last.slice(6)).error).toMatchObject({ type: 'api_error', code: 'upstream_error' });
    // The host's Finish bills bytes we never got: recorded `truncated`.
    await expect.poll(() => verdicts('truncated'), { timeout: 10_000, interval: 100 }).toBe(truncated + 1);
  });

  it('a Finish claiming the hash of other bytes counts a served-bytes mismatch', async () => {
    const escrow = stack.escrows[1]!;
    await liftEveryQuarantine();
    await new Promise((r) => setTimeout(r, 1_000));
    const status = (await (await fetch(`${replica.url}/v1/status`)).json()) as StatusBody;
    const runtime = status.runtimes.find((r) => r.escrow_id === escrow.id.toString())!;
    const next = BigInt(runtime.nonce ?? 0) + 1n;
    const host = escrow.slots[Number(next % BigInt(escrow.slots.length))]!;
    const before = await verdicts('mismatch');
    await stack.gateway.devnet.devshardHosts.setFault(host, { mode: 'tampered-finish', remaining: 1 });
    const res = await post(`/devshard/${escrow.id}/v1/chat/completions`, chat({ stream: true }));
    // The client got the true answer; only the Finish lies about it.
    expect(res.status).toBe(200);
    expect(res.text).toContain('data: [DONE]');
    await expect.poll(() => verdicts('mismatch'), { timeout: 10_000, interval: 100 }).toBe(before + 1);
  });

  async function verdicts(verdict: string): Promise<number> {
    const text = await (await fetch(`${replica.url}/metrics`)).text();
    const line = new RegExp(
      `^devshard_gateway_served_bytes_verdicts_total\\{verdict="${verdict}"\\} (\\d+)$`,
      'm',
    );
    return Number(line.exec(text)?.[1] ?? 0);
  }

  it('every served request leaves one usage record in the Redis stream', async () => {
    // A client's x-request-id is not the ledger's key (two clients could reuse one): the proxy's is.
    const res = await post('/v1/chat/completions', chat(), { 'x-request-id': 'usage-check-1' });
    expect(res.status).toBe(200);
    const id = res.headers.get('x-request-id');
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    await expect
      .poll(async () => {
        const entries = await stack.redis.redis.xrange(stack.keys.usageStream, '-', '+');
        return entries
          .map(([, fields]) =>
            Object.fromEntries(fields.flatMap((_, i) => (i % 2 ? [] : [[fields[i], fields[i + 1]]]))),
          )
          .filter((f) => f.request_id === id);
      })
      .toEqual([
        expect.objectContaining({
          model: QWEN_MODEL,
          status: '200',
          key_id: 'admin',
          nonces: expect.stringMatching(/^\d+$/),
        }),
      ]);
  });
});

/** A pool entry for `model` owned by `owner`, as an owner replica would publish it; returns its cleanup. */
async function seedPoolEscrow(escrowId: bigint, model: string, owner: string): Promise<() => Promise<void>> {
  const r = stack.redis.redis;
  await r.sadd(stack.keys.poolModels, model);
  await r.sadd(stack.keys.poolModel(model), escrowId.toString());
  await r.hset(stack.keys.poolEscrow(escrowId), {
    escrow_id: escrowId.toString(),
    model_id: model,
    status: 'active',
    capacity_weight: '4',
    balance_estimate: '5000000000',
    nonce: '0',
    owner,
    updated_at_ms: String(Date.now()),
  });
  // Every pool writer announces its change; the replicas' snapshots re-read on it.
  await r.publish(stack.keys.poolChanges, escrowId.toString());
  return async () => {
    await r.srem(stack.keys.poolModels, model);
    await r.del(stack.keys.poolModel(model), stack.keys.poolEscrow(escrowId));
    await r.publish(stack.keys.poolChanges, escrowId.toString());
  };
}

describe('a known model with no routable escrow', () => {
  it('503 with Retry-After: 10 and no nonce taken', async () => {
    const ghost = 'ghost/model';
    // An escrow of another model whose owner is gone (not in the replica directory).
    const cleanup = await seedPoolEscrow(424242n, ghost, 'replica-that-died');
    try {
      await expect
        .poll(async () => (await post('/v1/chat/completions', chat({ model: ghost }))).status, {
          timeout: 3_000,
          interval: 100,
        })
        .toBe(503);
      const before = await stack.startedInferences();
      const res = await post('/v1/chat/completions', chat({ model: ghost }));
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('10');
      expect(res.json().error.code).toBe('no_escrow_available');
      expect(await stack.startedInferences()).toBe(before);
    } finally {
      await cleanup();
    }
  });
});

describe('an owner replica that does not answer', () => {
  it('the forwarded request gets 503 with Retry-After, not a bare 500', async () => {
    const r = stack.redis.redis;
    const ghost = 'ghost/forwarded';
    const unreachable = new ReplicaDirectory({
      redis: r,
      keys: stack.keys,
      replicaId: 'unreachable',
      url: 'http://127.0.0.1:9',
      ttlMs: 30_000,
    });
    await unreachable.register();
    const cleanup = await seedPoolEscrow(424243n, ghost, 'unreachable');
    try {
      await expect
        .poll(async () => (await post('/v1/chat/completions', chat({ model: ghost }))).json().error.code, {
          timeout: 3_000,
          interval: 100,
        })
        .toBe('service_unavailable');
      const res = await post('/v1/chat/completions', chat({ model: ghost }));
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
    } finally {
      await cleanup();
      await unreachable.stop();
    }
  });
});
