import { readFileSync } from 'node:fs';
import { DEFAULT_PASSTHROUGH, GatewayError, RULED_CHAT_PARAMETERS } from '@gonka-gateway/shared';
import { describe, expect, it } from 'vitest';
import { MAX_MESSAGES } from './message-rules.js';
import { checkChatRequest, KNOWN_PARAMETERS } from './request-policy.js';
import { MAX_SCHEMA_CHARS, MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, MAX_TOOLS } from './tool-rules.js';

/** Bodies recorded from the official SDK clients' own requests (LangChain JS, the Vercel AI SDK). */
const sdkRequests = JSON.parse(readFileSync(new URL('./sdk-requests.json', import.meta.url), 'utf8')) as {
  client: string;
  case: string;
  body: unknown;
}[];

const user = { role: 'user', content: 'hi' };
const base = { model: 'Qwen/Qwen3', messages: [user] };
const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } } },
  },
};
const call = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } };

/** The GatewayError a body is refused with. */
function refusal(body: unknown, passthrough?: string[]): GatewayError {
  try {
    checkChatRequest(body, passthrough ? { passthrough: new Set(passthrough) } : {});
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error('the body was accepted');
}

function nested(depth: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < depth; i++) schema = { type: 'object', properties: { a: schema } };
  return schema;
}

describe('the request policy refuses, naming the parameter', () => {
  const cases: [string, Record<string, unknown>, string, string?][] = [
    // Unknown and required parameters.
    ['an unknown top-level parameter', { ...base, frobnicate: 1 }, 'frobnicate', 'unknown_parameter'],
    ['no model', { messages: [user] }, 'model'],
    ['an empty model', { ...base, model: '' }, 'model'],
    ['a model that is not a string', { ...base, model: 7 }, 'model'],
    ['no messages', { model: 'm' }, 'messages'],
    // Messages.
    ['an empty conversation', { ...base, messages: [] }, 'messages'],
    ['messages that are not a list', { ...base, messages: 'hi' }, 'messages'],
    ['too many messages', { ...base, messages: Array(MAX_MESSAGES + 1).fill(user) }, 'messages'],
    ['a message that is not an object', { ...base, messages: ['hi'] }, 'messages[0]'],
    ['an unknown role', { ...base, messages: [{ role: 'robot', content: 'x' }] }, 'messages[0].role'],
    [
      'a field the role may not carry',
      { ...base, messages: [{ role: 'user', content: 'x', tool_calls: [] }] },
      'messages[0].tool_calls',
      'unknown_parameter',
    ],
    [
      'content that is a number',
      { ...base, messages: [{ role: 'user', content: 42 }] },
      'messages[0].content',
    ],
    [
      'user content that is null',
      { ...base, messages: [{ role: 'user', content: null }] },
      'messages[0].content',
    ],
    ['an empty list of parts', { ...base, messages: [{ role: 'user', content: [] }] }, 'messages[0].content'],
    [
      'an image part (text-only hosts)',
      {
        ...base,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'what is this?' },
              { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
            ],
          },
        ],
      },
      'messages[0].content[1].type',
    ],
    [
      'a part of an unknown type',
      { ...base, messages: [{ role: 'user', content: [{ type: 'video', video: 'x' }] }] },
      'messages[0].content[0].type',
    ],
    [
      'a text part with another field',
      { ...base, messages: [{ role: 'user', content: [{ type: 'text', text: 'x', extra: 1 }] }] },
      'messages[0].content[0].extra',
      'unknown_parameter',
    ],
    [
      'a refusal part sent back (text-only hosts)',
      { ...base, messages: [user, { role: 'assistant', content: [{ type: 'refusal', refusal: 'no' }] }] },
      'messages[1].content[0].type',
    ],
    [
      'a tool message answering no earlier call',
      { ...base, messages: [user, { role: 'tool', tool_call_id: 'call_9', content: 'sunny' }] },
      'messages[1].tool_call_id',
    ],
    [
      'a tool message before the call it answers',
      {
        ...base,
        messages: [
          { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
          { role: 'assistant', content: null, tool_calls: [call] },
        ],
      },
      'messages[0].tool_call_id',
    ],
    [
      'an assistant tool call without arguments',
      {
        ...base,
        messages: [
          user,
          { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f' } }] },
        ],
      },
      'messages[1].tool_calls[0].function.arguments',
    ],
    [
      'a function message without a name',
      { ...base, messages: [{ role: 'function', content: 'x' }] },
      'messages[0].name',
    ],
    // Sampling.
    ['temperature above 2', { ...base, temperature: 5 }, 'temperature'],
    ['temperature below 0', { ...base, temperature: -0.1 }, 'temperature'],
    ['temperature as a string', { ...base, temperature: '0.5' }, 'temperature'],
    ['top_p of 0', { ...base, top_p: 0 }, 'top_p'],
    ['top_p above 1', { ...base, top_p: 1.01 }, 'top_p'],
    ['frequency_penalty above 2', { ...base, frequency_penalty: 2.5 }, 'frequency_penalty'],
    ['presence_penalty below -2', { ...base, presence_penalty: -3 }, 'presence_penalty'],
    ['a logit_bias key that is not a token id', { ...base, logit_bias: { hello: 1 } }, 'logit_bias'],
    ['a logit_bias value above 100', { ...base, logit_bias: { '50256': 101 } }, 'logit_bias.50256'],
    [
      'more than 300 biased tokens',
      { ...base, logit_bias: Object.fromEntries(Array.from({ length: 301 }, (_, i) => [String(i), 1])) },
      'logit_bias',
    ],
    ['five stop sequences', { ...base, stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop'],
    ['a stop sequence that is a number', { ...base, stop: ['a', 5] }, 'stop[1]'],
    ['a seed that is not an integer', { ...base, seed: 1.5 }, 'seed'],
    ['a seed beyond 64 bits', { ...base, seed: 2 ** 64 }, 'seed'],
    ['n above 1', { ...base, n: 2 }, 'n'],
    ['n of 0', { ...base, n: 0 }, 'n'],
    ['top_logprobs without logprobs', { ...base, top_logprobs: 2 }, 'top_logprobs'],
    ['top_logprobs above 20', { ...base, logprobs: true, top_logprobs: 21 }, 'top_logprobs'],
    ['logprobs as a string', { ...base, logprobs: 'yes' }, 'logprobs'],
    ['top_k below -1', { ...base, top_k: -2 }, 'top_k'],
    ['min_p above 1', { ...base, min_p: 1.5 }, 'min_p'],
    ['repetition_penalty of 0', { ...base, repetition_penalty: 0 }, 'repetition_penalty'],
    // Tokens.
    [
      'max_tokens and max_completion_tokens that differ',
      { ...base, max_tokens: 10, max_completion_tokens: 20 },
      'max_completion_tokens',
    ],
    ['max_tokens of 0', { ...base, max_tokens: 0 }, 'max_tokens'],
    ['max_tokens that is not an integer', { ...base, max_tokens: 1.5 }, 'max_tokens'],
    ['max_completion_tokens as a string', { ...base, max_completion_tokens: '64' }, 'max_completion_tokens'],
    // Streaming.
    ['stream as a string', { ...base, stream: 'true' }, 'stream'],
    [
      'an unknown stream option',
      { ...base, stream: true, stream_options: { continuous_usage_stats: true } },
      'stream_options.continuous_usage_stats',
      'unknown_parameter',
    ],
    [
      'include_usage as a string',
      { ...base, stream: true, stream_options: { include_usage: 'yes' } },
      'stream_options.include_usage',
    ],
    // Tools.
    [
      'a tool that is not a function',
      { ...base, tools: [{ type: 'custom', custom: { name: 'x' } }] },
      'tools[0].type',
    ],
    [
      'a tool name with spaces',
      { ...base, tools: [{ type: 'function', function: { name: 'get weather' } }] },
      'tools[0].function.name',
    ],
    ['more tools than OpenAI takes', { ...base, tools: Array(MAX_TOOLS + 1).fill(weather) }, 'tools'],
    [
      'a tool schema nested too deep',
      {
        ...base,
        tools: [{ type: 'function', function: { name: 'f', parameters: nested(MAX_SCHEMA_DEPTH) } }],
      },
      'tools[0].function.parameters',
    ],
    [
      'a tool schema with too many values',
      {
        ...base,
        tools: [
          {
            type: 'function',
            function: { name: 'f', parameters: { type: 'string', enum: Array(MAX_SCHEMA_NODES).fill('a') } },
          },
        ],
      },
      'tools[0].function.parameters',
    ],
    [
      'a tool schema too long',
      {
        ...base,
        tools: [
          {
            type: 'function',
            function: { name: 'f', parameters: { description: 'x'.repeat(MAX_SCHEMA_CHARS) } },
          },
        ],
      },
      'tools[0].function.parameters',
    ],
    [
      'a tool_choice that is not a mode',
      { ...base, tools: [weather], tool_choice: 'sometimes' },
      'tool_choice',
    ],
    [
      'a tool_choice naming no tool',
      { ...base, tools: [weather], tool_choice: { type: 'function', function: { name: 'other' } } },
      'tool_choice.function.name',
    ],
    [
      'parallel_tool_calls as a string',
      { ...base, tools: [weather], parallel_tool_calls: 'yes' },
      'parallel_tool_calls',
    ],
    [
      'a response_format of an unknown type',
      { ...base, response_format: { type: 'xml' } },
      'response_format.type',
    ],
    [
      'a json_schema response_format without a name',
      { ...base, response_format: { type: 'json_schema', json_schema: { schema: { type: 'object' } } } },
      'response_format.json_schema.name',
    ],
    // What the network's models cannot do.
    ['audio output', { ...base, modalities: ['text', 'audio'] }, 'modalities[1]'],
    ['audio parameters', { ...base, audio: { voice: 'alloy', format: 'mp3' } }, 'audio'],
    ['web search', { ...base, web_search_options: {} }, 'web_search_options'],
  ];

  it.each(cases)('%s', (_what, body, param, code = 'invalid_request') => {
    const error = refusal(body);
    expect(error.status).toBe(400);
    expect(error.toBody().error).toMatchObject({ code, param, type: 'invalid_request_error' });
    expect(error.message.length).toBeGreaterThan(0);
  });

  it('refuses a body that is not a JSON object', () => {
    for (const body of [[], 'hi', 5, null]) expect(refusal(body).status).toBe(400);
  });

  it('an unknown parameter passes once listed as passed through; a listed name does not lift a rule', () => {
    expect(refusal({ ...base, guided_json: {} }).code).toBe('unknown_parameter');
    expect(() =>
      checkChatRequest({ ...base, guided_json: {} }, { passthrough: new Set(['guided_json']) }),
    ).not.toThrow();
    expect(refusal({ ...base, temperature: 5 }, ['temperature']).param).toBe('temperature');
  });

  it("the controller's list of ruled parameters is this policy's (settings.passthrough_parameters refuses them)", () => {
    expect([...RULED_CHAT_PARAMETERS].sort()).toEqual([...KNOWN_PARAMETERS].sort());
    for (const name of DEFAULT_PASSTHROUGH) expect(KNOWN_PARAMETERS.has(name)).toBe(false);
  });
});

describe('the request policy accepts what OpenAI accepts', () => {
  it.each([
    [
      'the bounds',
      { temperature: 2, top_p: 1, frequency_penalty: -2, presence_penalty: 2, stop: ['a', 'b', 'c', 'd'] },
    ],
    [
      'nulls for optional parameters',
      { temperature: null, top_p: null, stop: null, seed: null, n: null, tools: null, stream_options: null },
    ],
    ['a negative seed and a single stop string', { seed: -(2 ** 62), stop: 'END', n: 1 }],
    ['the same token limit twice', { max_tokens: 64, max_completion_tokens: 64 }],
    ['logprobs with top_logprobs', { logprobs: true, top_logprobs: 20, logit_bias: { '50256': -100 } }],
    [
      'vLLM sampling and chat template options',
      { top_k: 40, min_p: 0.05, repetition_penalty: 1.1, chat_template_kwargs: { enable_thinking: false } },
    ],
    [
      'user, metadata, store, service tier, reasoning effort',
      {
        user: 'u-1',
        metadata: { team: 'a' },
        store: false,
        service_tier: 'auto',
        reasoning_effort: 'low',
        verbosity: 'low',
      },
    ],
    [
      'a text-only prediction and modality',
      { prediction: { type: 'content', content: 'draft' }, modalities: ['text'] },
    ],
    [
      'a stream with usage and obfuscation options',
      { stream: true, stream_options: { include_usage: true, include_obfuscation: false } },
    ],
  ])('%s', (_what, extra) => {
    expect(() => checkChatRequest({ ...base, ...extra })).not.toThrow();
  });

  it('a conversation with every role, named speakers, parts and a tool round trip', () => {
    const findings = checkChatRequest({
      ...base,
      tools: [weather],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false,
      messages: [
        { role: 'system', content: 'be brief', name: 'ops' },
        { role: 'developer', content: [{ type: 'text', text: 'json only' }] },
        { role: 'user', content: [{ type: 'text', text: 'weather?' }], name: 'ann' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
        {
          role: 'assistant',
          content: '',
          tool_calls: [{ ...call, id: 'call_2', index: 0 }],
          reasoning_content: 'hm',
        },
        { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: 'rain' }] },
        { role: 'assistant', function_call: { name: 'get_weather', arguments: '{}' } },
        { role: 'function', name: 'get_weather', content: null },
        { role: 'user', content: 'thanks' },
      ],
    });
    // Null or absent content reaches the host as "" (the hosts take a string or text parts).
    expect(findings.emptyContent).toEqual([3, 7, 8]);
    expect(findings.drop).toEqual([]);
  });

  it('drops a tool choice with no tools to choose from', () => {
    expect(checkChatRequest({ ...base, tool_choice: 'auto' }).drop).toEqual(['tool_choice']);
    expect(checkChatRequest({ ...base, tools: [], tool_choice: 'required' }).drop).toEqual(['tool_choice']);
    expect(checkChatRequest({ ...base, function_call: 'auto' }).drop).toEqual(['function_call']);
    expect(checkChatRequest({ ...base, tools: [weather], tool_choice: 'auto' }).drop).toEqual([]);
  });

  it('tells the serve stage what the client asked of the answer', () => {
    expect(checkChatRequest(base).ask).toEqual({ logprobs: false, topLogprobs: 0, includeUsage: false });
    expect(
      checkChatRequest({
        ...base,
        stream: true,
        stream_options: { include_usage: true },
        logprobs: true,
        top_logprobs: 3,
      }).ask,
    ).toEqual({ logprobs: true, topLogprobs: 3, includeUsage: true });
    // include_usage means something only for a stream: a completion always carries usage.
    expect(checkChatRequest({ ...base, stream_options: { include_usage: true } }).ask.includeUsage).toBe(
      false,
    );
  });

  it.each(sdkRequests.map((r) => [r.client, r.case, r.body] as const))(
    'what %s sends (%s)',
    (_client, _case, body) => {
      expect(() => checkChatRequest(body)).not.toThrow();
    },
  );
});
