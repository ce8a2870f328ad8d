import { describe, expect, it } from 'vitest';
import { assembleCompletion, parseDataLine } from './completion.js';
import type { ResponseAsk } from './request-policy.js';
import { cleanChunkLine, cleanCompletionText } from './response-hygiene.js';

const nothing: ResponseAsk = { logprobs: false, topLogprobs: 0, includeUsage: false };
const line = (value: object) => new TextEncoder().encode(`data: ${JSON.stringify(value)}`);
const text = (bytes: Uint8Array | undefined) =>
  bytes === undefined ? undefined : JSON.parse(Buffer.from(bytes).toString('utf8').slice(6));
const logprobs = {
  content: [
    {
      token: 'Hi',
      logprob: -0.1,
      bytes: [72, 105],
      top_logprobs: [
        { token: 'Hi', logprob: -0.1, bytes: [72, 105] },
        { token: 'Hey', logprob: -2, bytes: [72, 101, 121] },
        { token: 'Yo', logprob: -3, bytes: [89, 111] },
      ],
    },
  ],
  refusal: null,
};
const chunk = (extra: object = {}, choice: object = {}) => ({
  id: 'c',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'm',
  choices: [{ index: 0, delta: { content: 'Hi' }, logprobs: null, finish_reason: null, ...choice }],
  ...extra,
});

describe('streamed chunks carry only what the client asked for', () => {
  it('passes an ordinary chunk on as the same bytes, without parsing it', () => {
    const bytes = line(chunk({ usage: null }));
    expect(cleanChunkLine(bytes, nothing)).toBe(bytes);
  });

  it('removes token ids and logprobs the client did not ask for', () => {
    const cleaned = text(
      cleanChunkLine(line(chunk({ prompt_token_ids: [1, 2] }, { logprobs, token_ids: [9] })), nothing),
    );
    expect(cleaned).toEqual(chunk());
  });

  it('keeps logprobs asked for, each cut to the top_logprobs asked', () => {
    const ask = { ...nothing, logprobs: true, topLogprobs: 1 };
    const cleaned = text(cleanChunkLine(line(chunk({}, { logprobs })), ask));
    expect(cleaned.choices[0].logprobs.content[0].top_logprobs).toEqual([
      logprobs.content[0]?.top_logprobs[0],
    ]);
  });

  it('usage only with stream_options.include_usage: otherwise the usage chunk is dropped', () => {
    const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };
    const last = line({ ...chunk({ usage }), choices: [] });
    expect(cleanChunkLine(last, nothing)).toBeUndefined();
    expect(text(cleanChunkLine(line(chunk({ usage })), nothing))).toEqual(chunk());
    const asked = { ...nothing, includeUsage: true };
    expect(cleanChunkLine(last, asked)).toBe(last);
  });
});

describe('a non-streamed completion carries only what the client asked for', () => {
  const completion = {
    id: 'c',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    prompt_token_ids: [1, 2],
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: 'Hi' },
        logprobs,
        token_ids: [7],
        finish_reason: 'stop',
      },
    ],
    usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
  };

  it("cleans a host's whole completion, and passes a clean one on as its own text", () => {
    const json = JSON.stringify(completion);
    const cleaned = JSON.parse(cleanCompletionText(json, JSON.parse(json), nothing));
    expect(cleaned).toEqual({
      ...completion,
      prompt_token_ids: undefined,
      choices: [{ ...completion.choices[0], logprobs: null, token_ids: undefined }],
    });
    expect(cleaned).not.toHaveProperty('prompt_token_ids');
    const clean = JSON.stringify({
      ...completion,
      prompt_token_ids: undefined,
      choices: [{ index: 0, finish_reason: 'stop' }],
    });
    expect(cleanCompletionText(clean, JSON.parse(clean), nothing)).toBe(clean);
  });

  it('assembles the log probabilities of streamed chunks when asked, not otherwise', () => {
    const frames = [line(chunk({}, { logprobs })), line(chunk({}, { logprobs, finish_reason: 'stop' }))]
      .map((l) => parseDataLine(l))
      .filter((f) => f !== undefined);
    const asked = JSON.parse(
      assembleCompletion(frames, { id: 'x', model: 'm' }, { ...nothing, logprobs: true, topLogprobs: 2 }),
    );
    expect(asked.choices[0].logprobs.content).toHaveLength(2);
    expect(asked.choices[0].logprobs.content[0].top_logprobs).toHaveLength(2);
    const plain = JSON.parse(assembleCompletion(frames, { id: 'x', model: 'm' }, nothing));
    expect(plain.choices[0]).not.toHaveProperty('logprobs');
    expect(plain.choices[0].message.content).toBe('HiHi');
  });
});
