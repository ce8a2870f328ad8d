// The request policy end to end (apps/proxy README "Request policy"): one replica in this process on
// the devnet, and HAProxy in front of it with the configuration ./start generates (when haproxy is
// installed). Every class of refusal is a 4xx OpenAI error naming the parameter, on the replica and
// through the load balancer, and changes nothing: the escrow's nonce and balance, the fleet's
// admission state in Redis, the usage stream and ledger. What real clients send is served: the
// official openai client (max_completion_tokens, content parts, tools, response_format, seed, stop,
// a stream it aborts), and the requests LangChain JS and the Vercel AI SDK were recorded sending.
// The pass-through list is the environment's plus settings.passthrough_parameters: a change of the
// settings is served without a restart, and a name removed from them is refused again.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findHaproxy, haproxyConfig, type LoadBalancer, startHaproxy } from '@gonka-gateway/deploy';
import OpenAI from 'openai';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerOf } from '../devshard-devnet/ledger.js';
import { freePort } from '../support/gateway-process.js';
import {
  ADMIN_KEY,
  type InProcessReplica,
  ProxyStack,
  QWEN_MODEL,
  type StatusBody,
  waitFor,
} from './proxy-stack.js';

let stack: ProxyStack;
let replica: InProcessReplica;
let lb: LoadBalancer | undefined;
/** The replica, and the load balancer in front of it when haproxy is installed. */
const targets: [string, string][] = [];

beforeAll(async () => {
  stack = await ProxyStack.start(1);
  // No idle flush in this file: the escrow's nonce then moves only when a request takes one.
  // An operator's pass-through list names one parameter the gateway has no rule for.
  replica = await stack.startInProcess('policy', { GATEWAY_PASSTHROUGH_PARAMETERS: 'min_tokens' });
  await waitFor('the escrow owned', async () => (await stack.ownedBy(replica)).length === 1);
  targets.push(['replica', replica.url]);
  const bin = findHaproxy();
  if (bin) {
    const port = await freePort();
    const config = haproxyConfig({
      bind: `127.0.0.1:${port}`,
      servers: [{ name: 'policy', address: replica.url.replace('http://', '') }],
      header: 'tests/proxy/request-policy.test.ts',
    });
    lb = startHaproxy(bin, join(mkdtempSync(join(tmpdir(), 'policy-lb-')), 'haproxy.cfg'), config);
    const url = `http://127.0.0.1:${port}`;
    await waitFor('the load balancer', async () => (await fetch(`${url}/readyz`)).status === 200);
    targets.push(['load balancer', url]);
  }
}, 90_000);

afterAll(async () => {
  await lb?.stop();
  await stack?.close();
});

const messages = [{ role: 'user' as const, content: 'Tell me about fencing tokens' }];
const chat = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: QWEN_MODEL, messages, max_tokens: 64, ...extra });

async function post(base: string, body: string | Buffer, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json', ...headers },
    body,
  });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

/** Inferences of the escrow whose Finish is not folded in yet. */
async function unfinished(): Promise<string[]> {
  const escrow = stack.escrows[0]!;
  const ledger = ledgerOf(escrow.row, await stack.storedDiffs(escrow.id));
  return [...ledger.inferences]
    .filter(([, e]) => e.fate !== 'finished')
    .map(([nonce, e]) => `${nonce}:${e.fate}`);
}

/** Everything a request that took a nonce would change. */
async function ledger() {
  const status = (await (await fetch(`${replica.url}/v1/status`)).json()) as Pick<StatusBody, 'runtimes'> & {
    devshards: { balance_estimate: string }[];
  };
  const r = stack.redis.redis;
  const [usage] = await stack.storeSql<{ n: number }[]>`select count(*)::int as n from usage_records`;
  return {
    nonces: status.runtimes.map((x) => x.nonce),
    balances: status.devshards.map((d) => d.balance_estimate),
    admission: [await r.zcard(stack.keys.admissionRequests), await r.hlen(stack.keys.admissionTokens)],
    usageEvents: await r.xlen(stack.keys.usageStream),
    usageRows: usage!.n,
    startedInferences: await stack.startedInferences(),
  };
}

const nested = (depth: number) =>
  `{"model":"${QWEN_MODEL}","messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":${'['.repeat(depth)}${']'.repeat(depth)}}`;
const tool = (name: string) => ({ type: 'function', function: { name, parameters: { type: 'object' } } });

type Case = [
  what: string,
  body: string | Buffer,
  status: number,
  code: string,
  param: string | null,
  headers?: Record<string, string>,
];

const cases: Case[] = [
  // Body.
  ['a 12 MiB body', chat({ pad: 'x'.repeat(12 * 1024 * 1024) }), 413, 'body_too_large', null],
  [
    'a body that is not JSON by its type',
    chat(),
    415,
    'unsupported_media_type',
    null,
    { 'content-type': 'text/plain' },
  ],
  ['malformed JSON', '{"model": ', 400, 'invalid_json', null],
  [
    'bytes that are not UTF-8',
    Buffer.concat([Buffer.from(chat().slice(0, -1)), Buffer.from(',"user":"\xff"}', 'latin1')]),
    400,
    'invalid_json',
    null,
  ],
  [
    'nesting 100 levels deep',
    nested(100),
    400,
    'invalid_request',
    expect.stringMatching(/^chat_template_kwargs/) as unknown as string,
  ],
  [
    'a key given twice',
    `{"model":"${QWEN_MODEL}","max_tokens":64,"max_tokens":100000,"messages":[{"role":"user","content":"hi"}]}`,
    400,
    'invalid_request',
    'max_tokens',
  ],
  ['a JSON array', '[1,2]', 400, 'invalid_request', null],
  // Parameters and messages.
  ['an unknown parameter', chat({ frobnicate: true }), 400, 'unknown_parameter', 'frobnicate'],
  [
    'content that is a number',
    chat({ messages: [{ role: 'user', content: 42 }] }),
    400,
    'invalid_request',
    'messages[0].content',
  ],
  [
    'an unknown role',
    chat({ messages: [{ role: 'robot', content: 'hi' }] }),
    400,
    'invalid_request',
    'messages[0].role',
  ],
  ['an empty conversation', chat({ messages: [] }), 400, 'invalid_request', 'messages'],
  [
    'an image part',
    chat({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is it?' },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
          ],
        },
      ],
    }),
    400,
    'invalid_request',
    'messages[0].content[1].type',
  ],
  [
    'a tool message answering no call',
    chat({ messages: [...messages, { role: 'tool', tool_call_id: 'call_9', content: 'sunny' }] }),
    400,
    'invalid_request',
    'messages[1].tool_call_id',
  ],
  // Sampling and tokens.
  ['temperature 5', chat({ temperature: 5 }), 400, 'invalid_request', 'temperature'],
  ['top_p 0', chat({ top_p: 0 }), 400, 'invalid_request', 'top_p'],
  ['five stop sequences', chat({ stop: ['a', 'b', 'c', 'd', 'e'] }), 400, 'invalid_request', 'stop'],
  ['a seed that is not an integer', chat({ seed: 1.5 }), 400, 'invalid_request', 'seed'],
  ['n 2', chat({ n: 2 }), 400, 'invalid_request', 'n'],
  [
    'max_tokens and max_completion_tokens that differ',
    chat({ max_completion_tokens: 32 }),
    400,
    'invalid_request',
    'max_completion_tokens',
  ],
  // Tools.
  [
    'a tool with an invalid name',
    chat({ tools: [tool('get weather')] }),
    400,
    'invalid_request',
    'tools[0].function.name',
  ],
  [
    'a tool_choice naming no tool',
    chat({ tools: [tool('a')], tool_choice: { type: 'function', function: { name: 'b' } } }),
    400,
    'invalid_request',
    'tool_choice.function.name',
  ],
];

describe('every refusal is a 4xx OpenAI error, before admission, and changes nothing', () => {
  it.each(cases)('%s', async (_what, body, status, code, param, headers = {}) => {
    for (const [where, base] of targets) {
      const before = await ledger();
      const res = await post(base, body, headers);
      expect(res.status, where).toBe(status);
      expect(res.type, where).toMatch(/^application\/json/);
      const error = JSON.parse(res.text).error;
      expect(error, where).toMatchObject({
        code,
        param,
        type: 'invalid_request_error',
        message: expect.any(String),
      });
      expect(res.text).not.toMatch(/\bat .*\.ts:\d+/);
      expect(await ledger(), where).toEqual(before);
    }
  });

  it('the openai client reads a refusal as a BadRequestError naming the parameter', async () => {
    const error = await stack
      .client(replica)
      .chat.completions.create({ model: QWEN_MODEL, messages, temperature: 5 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ status: 400, param: 'temperature', code: 'invalid_request' });
  });
});

describe('what real clients send is served', () => {
  const weather = {
    type: 'function' as const,
    function: {
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  };

  it('the openai client: max_completion_tokens, content parts, sampling, seed, stop, response_format', async () => {
    const client = stack.client(replica);
    const completion = await client.chat.completions.create({
      model: QWEN_MODEL,
      messages: [
        { role: 'system', content: 'Answer briefly.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Tell me' },
            { type: 'text', text: 'about fencing' },
          ],
        },
      ],
      max_completion_tokens: 48,
      temperature: 0.2,
      top_p: 0.9,
      frequency_penalty: 0.1,
      presence_penalty: 0.1,
      seed: 7,
      stop: ['END'],
      user: 'user-1',
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'answer',
          strict: true,
          schema: { type: 'object', properties: { a: { type: 'string' } } },
        },
      },
    });
    expect(completion.choices[0]?.message.content?.length).toBeGreaterThan(0);
    expect(completion.usage?.completion_tokens).toBeGreaterThan(0);
    // The host computed no log probabilities the client did not ask for.
    expect(completion.choices[0]?.logprobs ?? null).toBeNull();
  });

  it('the openai client: a tool round trip, the assistant turn with content null', async () => {
    const client = stack.client(replica);
    const first = await client.chat.completions.create({
      model: QWEN_MODEL,
      messages,
      tools: [weather],
      tool_choice: 'auto',
      parallel_tool_calls: true,
    });
    expect(first.choices[0]?.finish_reason).toBeTruthy();
    const second = await client.chat.completions.create({
      model: QWEN_MODEL,
      tools: [weather],
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      ],
    });
    expect(second.choices[0]?.message.content?.length).toBeGreaterThan(0);
    // A tool choice with no tools is dropped, as the reference gateway does, not refused.
    const noTools = await client.chat.completions.create({
      model: QWEN_MODEL,
      messages,
      tool_choice: 'none',
    });
    expect(noTools.choices[0]?.message.content?.length).toBeGreaterThan(0);
  });

  it('streams carry usage only when include_usage is set', async () => {
    const client = stack.client(replica);
    for (const includeUsage of [true, false]) {
      const stream = await client.chat.completions.create({
        model: QWEN_MODEL,
        messages,
        max_tokens: 32,
        stream: true,
        ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
      });
      let text = '';
      const usages: unknown[] = [];
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? '';
        if (chunk.usage) usages.push(chunk.usage);
      }
      expect(text.length).toBeGreaterThan(0);
      expect(usages).toHaveLength(includeUsage ? 1 : 0);
    }
  });

  it('a client that aborts mid-stream leaves nothing admitted and the Finish folded in', async () => {
    // Tokens come slowly enough for the client to leave while the host still streams.
    stack.gateway.devnet.model.setLatency({ perTokenMs: 15 });
    const controller = new AbortController();
    // Its own connection pool: after the abort, undici leaves a fresh connection that never sends a
    // request, which a server's close waits on for its headers timeout; destroyed with the pool.
    const agent = new Agent();
    const client = new OpenAI({
      apiKey: ADMIN_KEY,
      baseURL: `${replica.url}/v1`,
      maxRetries: 0,
      fetch: ((url: string, init: object) =>
        undiciFetch(url, { ...init, dispatcher: agent })) as unknown as typeof fetch,
    });
    let chunks = 0;
    try {
      const stream = await client.chat.completions.create(
        { model: QWEN_MODEL, messages, max_tokens: 64, stream: true },
        { signal: controller.signal },
      );
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta?.content && ++chunks === 3) controller.abort();
      }
    } catch (error) {
      expect(error).toBeInstanceOf(OpenAI.APIUserAbortError);
    } finally {
      stack.gateway.devnet.model.setLatency({ perTokenMs: 0 });
      await agent.destroy();
    }
    expect(chunks).toBe(3);
    await expect.poll(unfinished, { timeout: 10_000, interval: 100 }).toEqual([]);
    expect(await stack.redis.redis.zcard(stack.keys.admissionRequests)).toBe(0);
    const next = await stack
      .client(replica)
      .chat.completions.create({ model: QWEN_MODEL, messages, max_tokens: 32 });
    expect(next.choices[0]?.message.content?.length).toBeGreaterThan(0);
  });

  it("an operator's pass-through parameter reaches the host; chat_template_kwargs always does", async () => {
    const res = await post(
      replica.url,
      chat({ min_tokens: 4, chat_template_kwargs: { enable_thinking: false } }),
    );
    expect(res.status, res.text).toBe(200);
    const refused = await post(replica.url, chat({ guided_json: { type: 'object' } }));
    expect(JSON.parse(refused.text).error).toMatchObject({ code: 'unknown_parameter', param: 'guided_json' });
  });

  it('a parameter passed through in settings is served after the change reaches the replica, refused once removed', async () => {
    const refusedAs = async (body: string) => JSON.parse((await post(replica.url, body)).text).error;
    const withParam = chat({ ignore_eos: false });
    expect(await refusedAs(withParam)).toMatchObject({ code: 'unknown_parameter', param: 'ignore_eos' });

    // What POST /v1/admin/settings {"passthrough_parameters": ["ignore_eos"]} writes and announces.
    await stack.updateSettings({ passthroughParameters: ['ignore_eos'] });
    await expect
      .poll(async () => (await post(replica.url, withParam)).status, { timeout: 2_000, interval: 50 })
      .toBe(200);
    // The environment's base list still applies beside the settings' list.
    const both = await post(replica.url, chat({ ignore_eos: false, min_tokens: 4 }));
    expect(both.status, both.text).toBe(200);

    await stack.updateSettings({ passthroughParameters: [] });
    await expect
      .poll(async () => (await post(replica.url, withParam)).status, { timeout: 2_000, interval: 50 })
      .toBe(400);
    expect(await refusedAs(withParam)).toMatchObject({ code: 'unknown_parameter', param: 'ignore_eos' });
    expect((await post(replica.url, chat({ min_tokens: 4 }))).status).toBe(200);
  });

  const recorded = JSON.parse(
    readFileSync(new URL('../../apps/proxy/src/chat/sdk-requests.json', import.meta.url), 'utf8'),
  ) as { client: string; case: string; body: Record<string, unknown> }[];

  it.each(recorded.map((r) => [r.client, r.case, r.body] as const))(
    'what %s sends (%s), through the load balancer when there is one',
    async (_client, _case, body) => {
      const base = targets.at(-1)![1];
      const res = await post(base, JSON.stringify({ ...body, model: QWEN_MODEL }));
      expect(res.status, res.text).toBe(200);
      if (body.stream === true) {
        expect(res.text).toContain('data: [DONE]');
        expect(res.text).toContain('"chat.completion.chunk"');
      } else {
        expect(JSON.parse(res.text).choices[0].message).toBeTruthy();
      }
    },
  );
});
