import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { servedText } from '../host/validator.js';
import { createApp, listen } from '../http.js';
import type { ChatRequest } from './chat-request.js';
import { completionBody, MockModel, streamFrames } from './mock-model.js';
import { modelRoutes } from './model-routes.js';
import { countTokens, tokenize } from './tokenizer.js';

const request: ChatRequest = {
  model: 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8',
  messages: [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: [{ type: 'text', text: 'Hello, devnet!' }] },
  ],
};

describe('tokenizer', () => {
  it('splits words and single punctuation marks', () => {
    expect(tokenize('Hello, devnet! 42 ok')).toEqual(['Hello', ',', 'devnet', '!', '42', 'ok']);
    expect(countTokens('  ')).toBe(0);
  });
});

describe('MockModel', () => {
  const model = new MockModel();

  it('answers the same request with the same text, and a different prompt differently', () => {
    const a = model.complete(request);
    expect(model.complete(request).text).toBe(a.text);
    expect(model.complete({ ...request, messages: [{ role: 'user', content: 'other' }] }).text).not.toBe(
      a.text,
    );
    expect(model.complete({ ...request, seed: 7 }).text).not.toBe(a.text);
  });

  it('counts prompt and completion tokens with the one tokenizer', () => {
    const c = model.complete(request);
    expect(c.promptTokens).toBe(countTokens('system: You are terse.\nuser: Hello, devnet!'));
    expect(c.completionTokens).toBe(countTokens(c.text));
    expect(c.pieces.join('')).toBe(c.text);
    expect(c.finishReason).toBe('stop');
  });

  it('respects max_tokens by truncating the same text', () => {
    const full = model.complete(request);
    const cut = model.complete({ ...request, max_tokens: 3 });
    expect(cut.completionTokens).toBe(3);
    expect(cut.finishReason).toBe('length');
    expect(full.text.startsWith(cut.text)).toBe(true);
    expect(model.complete({ ...request, max_completion_tokens: 2 }).completionTokens).toBe(2);
  });

  it('builds chat.completion and chat.completion.chunk frames ending with [DONE]', () => {
    const c = model.complete(request);
    expect(completionBody(c)).toMatchObject({
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: c.text }, finish_reason: 'stop' }],
      usage: {
        prompt_tokens: c.promptTokens,
        completion_tokens: c.completionTokens,
        total_tokens: c.promptTokens + c.completionTokens,
      },
    });
    const frames = streamFrames(c, true);
    expect(frames.at(-1)).toBe('data: [DONE]\n\n');
    const usage = JSON.parse(frames.at(-2)!.slice(6));
    expect(usage).toMatchObject({ choices: [], usage: { completion_tokens: c.completionTokens } });
    const first = JSON.parse(frames[0]!.slice(6));
    expect(first).toMatchObject({
      object: 'chat.completion.chunk',
      usage: null,
      choices: [{ delta: { role: 'assistant' } }],
    });
    expect(streamFrames(c, false).some((f) => f.includes('"usage"'))).toBe(false);
  });
});

describe('MockModel with tools and structured output', () => {
  const model = new MockModel();
  const weather = {
    type: 'function' as const,
    function: {
      name: 'get_weather',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string' },
          days: { type: 'integer', minimum: 1, maximum: 7 },
          unit: { enum: ['c', 'f'] },
          note: { anyOf: [{ type: 'null' }, { type: 'string' }] },
        },
        required: ['city', 'days', 'unit', 'note'],
      },
    },
  };
  const time = { type: 'function' as const, function: { name: 'get_time', parameters: { type: 'object' } } };
  const withTools: ChatRequest = { ...request, tools: [weather, time] };

  it('calls the first tool with arguments that fit its schema, streamed as OpenAI does', () => {
    const c = model.complete(withTools);
    expect(c.toolCall?.name).toBe('get_weather');
    expect(c.finishReason).toBe('tool_calls');
    const args = JSON.parse(c.text);
    expect(typeof args.city).toBe('string');
    expect(Number.isInteger(args.days) && args.days >= 1 && args.days <= 7).toBe(true);
    expect(['c', 'f']).toContain(args.unit);
    expect(typeof args.note).toBe('string');
    expect(model.complete(withTools).text).toBe(c.text);

    const chunks = streamFrames(c, false)
      .slice(0, -1)
      .map((f) => JSON.parse(f.slice(6)));
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: null });
    expect(chunks[1].choices[0].delta.tool_calls[0]).toMatchObject({
      index: 0,
      id: c.toolCall!.id,
      type: 'function',
      function: { name: 'get_weather' },
    });
    const streamed = chunks.map((k) =>
      (k.choices[0].delta.tool_calls ?? []).map(
        (t: { function: { arguments: string } }) => t.function.arguments,
      ),
    );
    expect(streamed.flat().join('')).toBe(c.text);
    expect(chunks.at(-1).choices[0].finish_reason).toBe('tool_calls');
    expect(servedText(streamFrames(c, false).join(''))).toBe(c.text);

    expect(completionBody(c).choices[0]!.message).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: c.toolCall!.id, type: 'function', function: { name: 'get_weather', arguments: c.text } },
      ],
    });
  });

  it('follows tool_choice, and answers a tool result in text', () => {
    const named = model.complete({
      ...withTools,
      tool_choice: { type: 'function', function: { name: 'get_time' } },
    });
    expect(named.toolCall?.name).toBe('get_time');
    expect(JSON.parse(named.text)).toEqual({});
    expect(model.complete({ ...withTools, tool_choice: 'none' }).toolCall).toBeUndefined();
    const afterResult: ChatRequest = {
      ...withTools,
      messages: [...request.messages, { role: 'assistant', content: '' }, { role: 'tool', content: 'sunny' }],
    };
    const answer = model.complete(afterResult);
    expect(answer.toolCall).toBeUndefined();
    expect(answer.finishReason).toBe('stop');
    expect(model.complete({ ...afterResult, tool_choice: 'required' }).toolCall?.name).toBe('get_weather');
  });

  it('answers a json_schema or json_object response_format with JSON, cut by max_tokens', () => {
    const schema = {
      type: 'object',
      properties: {
        name: { type: 'string' },
        tags: { type: 'array', items: { type: 'string' }, minItems: 2 },
      },
    };
    const format = { type: 'json_schema' as const, json_schema: { schema } };
    const c = model.complete({ ...request, response_format: format });
    const value = JSON.parse(c.text);
    expect(typeof value.name).toBe('string');
    expect(value.tags).toHaveLength(2);
    expect(c.finishReason).toBe('stop');
    expect(c.completionTokens).toBe(c.pieces.length);
    expect(
      typeof JSON.parse(model.complete({ ...request, response_format: { type: 'json_object' } }).text).answer,
    ).toBe('string');
    const asked = model.complete({
      ...request,
      response_format: { type: 'json_object' },
      messages: [
        {
          role: 'system',
          content: `JSON schema:\n${JSON.stringify(schema)}\nAnswer with a JSON object that matches it.`,
        },
        { role: 'user', content: 'Invent {a} person.' },
      ],
    });
    expect(Object.keys(JSON.parse(asked.text))).toEqual(['name', 'tags']);
    const safe = { type: 'integer', minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER };
    const n = JSON.parse(
      model.complete({ ...request, response_format: { type: 'json_schema', json_schema: { schema: safe } } })
        .text,
    );
    expect(n >= 0 && n <= 100).toBe(true);
    const cut = model.complete({ ...request, response_format: format, max_tokens: 3 });
    expect(cut.completionTokens).toBe(3);
    expect(cut.finishReason).toBe('length');
    expect(c.text.startsWith(cut.text)).toBe(true);
  });
});

describe('MockModel stop sequences', () => {
  it('ends the answer before the first stop sequence, with finish_reason "stop"', () => {
    const model = new MockModel();
    const full = model.complete(request).text;
    const word = full.split(' ')[2]!;
    const c = model.complete({ ...request, stop: ['zzz-never', word] });
    expect(c.text).toBe(full.slice(0, full.indexOf(word)));
    expect(c.pieces.join('')).toBe(c.text);
    expect(c.completionTokens).toBe(c.pieces.length);
    expect(c.finishReason).toBe('stop');
    expect(model.complete({ ...request, stop: 'zzz-never' }).text).toBe(full);
  });
});

describe('MockModel logprobs', () => {
  it('gives one per token when asked, with top_logprobs led by the token itself, in chunks too', () => {
    const model = new MockModel();
    const plain = model.complete(request);
    const c = model.complete({ ...request, logprobs: true, top_logprobs: 3 });
    expect(c.text).toBe(plain.text);
    expect(plain.logprobs).toBeUndefined();
    expect(c.logprobs).toHaveLength(c.pieces.length);
    for (const [i, lp] of c.logprobs!.entries()) {
      expect(lp.token).toBe(c.pieces[i]);
      expect(lp.logprob).toBeLessThanOrEqual(0);
      expect(lp.top_logprobs).toHaveLength(3);
      expect(lp.top_logprobs[0]).toEqual({ token: lp.token, logprob: lp.logprob, bytes: lp.bytes });
    }
    expect(completionBody(c).choices[0]!.logprobs).toEqual({ content: c.logprobs, refusal: null });
    const chunks = streamFrames(c, false)
      .slice(1, 1 + c.pieces.length)
      .map((f) => JSON.parse(f.slice(6)));
    expect(chunks.map((k) => k.choices[0].logprobs.content[0])).toEqual(c.logprobs);
    expect(model.complete({ ...request, logprobs: true }).logprobs![0]!.top_logprobs).toEqual([]);
  });
});

describe('model over HTTP', () => {
  const model = new MockModel();
  const app = createApp(false);
  let url = '';

  beforeAll(async () => {
    await app.register(modelRoutes, { model });
    url = `${await listen(app, '127.0.0.1', 0)}/v1/chat/completions`;
  });
  afterAll(() => app.close());

  const post = (body: unknown) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('serves the non-streaming completion', async () => {
    const res = await post(request);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      object: 'chat.completion',
      choices: [{ message: { content: model.complete(request).text } }],
    });
  });

  it('streams deltas that add up to the same text, with a usage chunk and [DONE]', async () => {
    model.setLatency({ timeToFirstTokenMs: 1, perTokenMs: 1 });
    const res = await post({ ...request, stream: true, stream_options: { include_usage: true } });
    model.setLatency({ timeToFirstTokenMs: 0, perTokenMs: 0 });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const events = (await res.text()).split('\n\n').filter(Boolean);
    expect(events.at(-1)).toBe('data: [DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)));
    const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    expect(text).toBe(model.complete(request).text);
    expect(chunks.at(-1).usage.completion_tokens).toBe(countTokens(text));
  });

  it('serves a tool call in the non-streaming completion', async () => {
    const body = {
      ...request,
      tools: [
        {
          type: 'function',
          function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } },
        },
      ],
    };
    const res = await post(body);
    expect(res.status).toBe(200);
    const c = model.complete(body as ChatRequest);
    expect(await res.json()).toMatchObject({
      choices: [
        {
          message: {
            content: null,
            tool_calls: [{ type: 'function', function: { name: 'lookup', arguments: c.text } }],
          },
          finish_reason: 'tool_calls',
        },
      ],
    });
  });

  it('rejects content that is neither a string nor text parts (400)', async () => {
    expect(
      (
        await post({
          ...request,
          messages: [{ role: 'user', content: [{ type: 'image_url', image_url: 'x' }] }],
        })
      ).status,
    ).toBe(400);
    expect((await post({ ...request, messages: [{ role: 'user', content: 5 }] })).status).toBe(400);
    expect((await post({ ...request, max_tokens: 0 })).status).toBe(400);
  });
});
