import { describe, expect, it } from 'vitest';
import { assembleCompletion, parseDataLine, parseDataLines, streamChunkUsage } from './completion.js';

const line = (text: string) => new TextEncoder().encode(text);
const frames = (...texts: string[]) =>
  texts.map((t) => parseDataLine(line(t))).filter((f) => f !== undefined);

describe('non-streamed answers out of host lines', () => {
  it("passes a host's chat.completion line on as the host wrote it", () => {
    const json =
      '{"id":"c-1","object":"chat.completion","choices":[],"usage":{"prompt_tokens":3, "completion_tokens":2}}';
    expect(assembleCompletion(frames(`data: ${json}`), { id: 'x', model: 'm' })).toBe(json);
  });

  it('assembles chunks into one completion, and skips lines that are not JSON objects', () => {
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'c-2', object: 'chat.completion.chunk', model: 'm', created: 7, choices: [{ index: 0, delta, finish_reason: finish }] })}`;
    const text = assembleCompletion(
      frames(
        chunk({ role: 'assistant', content: '' }),
        chunk({ content: 'Hi' }),
        'data: [DONE]',
        chunk({}, 'stop'),
      ),
      { id: 'x', model: 'm' },
    );
    expect(JSON.parse(text)).toEqual({
      id: 'c-2',
      object: 'chat.completion',
      created: 7,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' }],
    });
  });
});

describe('a completion assembled from streamed tool calls', () => {
  it('joins each call by index: id, type and name once, the arguments in pieces; content null', () => {
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'c-3', object: 'chat.completion.chunk', model: 'm', created: 9, choices: [{ index: 0, delta, finish_reason: finish }] })}`;
    const text = assembleCompletion(
      frames(
        chunk({ role: 'assistant', content: null }),
        chunk({
          tool_calls: [
            { index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } },
          ],
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] }),
        chunk({ reasoning_content: 'thinking' }),
        chunk({}, 'tool_calls'),
        `data: ${JSON.stringify({ id: 'c-3', choices: [], usage: { prompt_tokens: 4, completion_tokens: 6 } })}`,
      ),
      { id: 'x', model: 'm' },
    );
    expect(JSON.parse(text)).toEqual({
      id: 'c-3',
      object: 'chat.completion',
      created: 9,
      model: 'm',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            reasoning_content: 'thinking',
            tool_calls: [
              {
                id: 'call_1',
                type: 'function',
                function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
              },
            ],
          },
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 4, completion_tokens: 6 },
    });
  });
});

describe('parseDataLines', () => {
  it('parses a whole answer as one array, skipping what is not a data object', () => {
    const frames = parseDataLines([
      line('data: {"a":1}'),
      line('data:{"b":"x,y"}'),
      line('data: [DONE]'),
      line(': comment'),
      line('data:   {"c":{"d":[1,2]}}'),
    ]);
    expect(frames.map((f) => f.value)).toEqual([{ a: 1 }, { b: 'x,y' }, { c: { d: [1, 2] } }]);
  });

  it('falls back to one parse per line when one line is broken', () => {
    const frames = parseDataLines([line('data: {"a":1}'), line('data: {"broken":'), line('data: {"c":3}')]);
    expect(frames.map((f) => f.value)).toEqual([{ a: 1 }, { c: 3 }]);
  });
});

describe('streamChunkUsage', () => {
  it('reads the usage of the chunk that carries one, and none from `"usage": null` chunks', () => {
    expect(
      streamChunkUsage(line('data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":9}}')),
    ).toEqual({
      prompt_tokens: 5,
      completion_tokens: 9,
    });
    expect(
      streamChunkUsage(line('data: {"choices":[{"delta":{"content":"a"}}],"usage":null}')),
    ).toBeUndefined();
    expect(streamChunkUsage(line('data: {"choices":[],"usage" :\tnull }'))).toBeUndefined();
    expect(
      streamChunkUsage(line('data: {"choices":[{"delta":{"content":"no usage here"}}]}')),
    ).toBeUndefined();
  });

  it('still parses a chunk whose text is "usage" or that has a real usage after a null one', () => {
    expect(
      streamChunkUsage(line('data: {"choices":[{"delta":{"content":"usage"}}],"usage":null}')),
    ).toBeUndefined();
    expect(
      streamChunkUsage(line('data: {"a":{"usage":null},"usage":{"prompt_tokens":1,"completion_tokens":2}}')),
    ).toEqual({ prompt_tokens: 1, completion_tokens: 2 });
    // Cut off right after the key: parsed (and found invalid), never read past the end.
    expect(streamChunkUsage(line('data: {"usage":nu'))).toBeUndefined();
  });
});
