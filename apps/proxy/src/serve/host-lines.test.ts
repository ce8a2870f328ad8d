import { describe, expect, it } from 'vitest';
import { classifyHostLine, type HostLine, mayBeError } from './host-lines.js';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const data = (value: unknown): Uint8Array => bytes(`data: ${JSON.stringify(value)}`);
const chunk = (delta: Record<string, unknown>) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  model: 'Qwen/Qwen3-32B',
  choices: [{ index: 0, delta, finish_reason: null }],
});
const kindOf = (line: Uint8Array): HostLine['kind'] => classifyHostLine(line).kind;

describe('classifyHostLine: content or preamble', () => {
  it('holds the role-only first delta as preamble', () => {
    expect(kindOf(data(chunk({ role: 'assistant' })))).toBe('preamble');
    expect(kindOf(data(chunk({ role: 'assistant', content: '' })))).toBe('preamble');
  });

  it('treats an empty or null content delta as preamble', () => {
    expect(kindOf(data(chunk({ content: '' })))).toBe('preamble');
    expect(kindOf(data(chunk({ content: null })))).toBe('preamble');
    expect(kindOf(data(chunk({ content: null, tool_calls: [] })))).toBe('preamble');
    expect(kindOf(data(chunk({})))).toBe('preamble');
  });

  it('starts the answer at text, tool calls, reasoning or a refusal', () => {
    expect(kindOf(data(chunk({ content: 'Hel' })))).toBe('content');
    expect(
      kindOf(
        data(
          chunk({
            tool_calls: [
              { index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '' } },
            ],
          }),
        ),
      ),
    ).toBe('content');
    expect(kindOf(data(chunk({ reasoning_content: 'Let me think' })))).toBe('content');
    expect(kindOf(data(chunk({ refusal: 'I cannot help with that' })))).toBe('content');
  });

  it('finds content in any choice, not only the first', () => {
    const line = data({
      object: 'chat.completion.chunk',
      choices: [
        { index: 0, delta: { content: '' } },
        { index: 1, delta: { content: 'x' } },
      ],
    });
    expect(kindOf(line)).toBe('content');
  });

  it('treats a chunk without choices (a usage-only chunk) as preamble', () => {
    expect(kindOf(data({ object: 'chat.completion.chunk', choices: [], usage: { total_tokens: 3 } }))).toBe(
      'preamble',
    );
    expect(kindOf(data({ object: 'chat.completion.chunk', usage: { total_tokens: 3 } }))).toBe('preamble');
  });

  it('classifies a non-streamed chat.completion by its message', () => {
    const completion = (message: Record<string, unknown>) => ({
      id: 'chatcmpl-2',
      object: 'chat.completion',
      choices: [{ index: 0, message, finish_reason: 'stop' }],
    });
    expect(kindOf(data(completion({ role: 'assistant', content: 'Hello' })))).toBe('content');
    expect(kindOf(data(completion({ role: 'assistant', content: '' })))).toBe('preamble');
    expect(kindOf(data(completion({ role: 'assistant', content: null })))).toBe('preamble');
  });

  it('treats comments, [DONE], other fields and non-JSON data lines as preamble without a frame', () => {
    for (const text of [
      ': keep-alive',
      'data: [DONE]',
      'event: devshard_receipt',
      'data: {not json',
      'data:',
      '',
    ]) {
      expect(classifyHostLine(bytes(text)), text).toEqual({ kind: 'preamble' });
    }
  });

  it("keeps the line's parse: the frame's json and value are what the line carried", () => {
    const value = chunk({ content: 'Hi' });
    const json = JSON.stringify(value);
    const content = classifyHostLine(bytes(`data: ${json}\r`));
    expect(content).toEqual({ kind: 'content', frame: { json, value } });

    const role = chunk({ role: 'assistant' });
    const preamble = classifyHostLine(bytes(`data:${JSON.stringify(role)}`));
    expect(preamble).toEqual({ kind: 'preamble', frame: { json: JSON.stringify(role), value: role } });
  });

  it('reads only its own bytes when the line is a view into a larger buffer', () => {
    const whole = bytes(`data: ${JSON.stringify(chunk({ content: 'x' }))}\ndata: {"error":{"code":500}}\n`);
    const end = whole.indexOf(0x0a);
    const first = whole.subarray(0, end);
    const second = whole.subarray(end + 1, whole.length - 1);
    expect(kindOf(first)).toBe('content');
    expect(mayBeError(first)).toBe(false);
    expect(mayBeError(second)).toBe(true);
    expect(kindOf(second)).toBe('error');
  });
});

describe('classifyHostLine: error events', () => {
  it('takes the status from a numeric code and marks a 400 deterministic', () => {
    const line = data({
      error: {
        object: 'error',
        message: "This model's maximum context length is 32768 tokens",
        type: 'BadRequestError',
        param: null,
        code: 400,
      },
    });
    expect(classifyHostLine(line)).toEqual({
      kind: 'error',
      status: 400,
      message: "This model's maximum context length is 32768 tokens",
      deterministic: true,
    });
  });

  it('marks 404, 413 and 422 deterministic', () => {
    for (const status of [404, 413, 422]) {
      expect(classifyHostLine(data({ error: { message: 'bad', status } }))).toMatchObject({
        kind: 'error',
        status,
        deterministic: true,
      });
    }
  });

  it('takes the status from the error, then the event, then the code', () => {
    expect(classifyHostLine(data({ error: 'Too Many Requests', status: 429 }))).toEqual({
      kind: 'error',
      status: 429,
      message: 'Too Many Requests',
      deterministic: false,
    });
    expect(classifyHostLine(data({ error: { status: 422, code: 500, message: 'm' } }))).toMatchObject({
      status: 422,
    });
    expect(classifyHostLine(data({ error: { code: 500, message: 'm' }, status: 413 }))).toMatchObject({
      status: 413,
    });
  });

  it('reads invalid_request_error without a numeric status as a deterministic 400', () => {
    const line = data({
      error: { message: 'Invalid tool arguments', type: 'invalid_request_error', code: 'invalid_tool_json' },
    });
    expect(classifyHostLine(line)).toEqual({
      kind: 'error',
      status: 400,
      message: 'Invalid tool arguments',
      deterministic: true,
    });
  });

  it('treats 500 and 429 as transient', () => {
    expect(classifyHostLine(data({ error: { message: 'CUDA out of memory', code: 500 } }))).toEqual({
      kind: 'error',
      status: 500,
      message: 'CUDA out of memory',
      deterministic: false,
    });
    expect(classifyHostLine(data({ error: { message: 'slow down', code: 429 } }))).toMatchObject({
      status: 429,
      deterministic: false,
    });
  });

  it('reads an error without a usable status as a transient 500', () => {
    expect(classifyHostLine(data({ error: { message: 'engine died' } }))).toEqual({
      kind: 'error',
      status: 500,
      message: 'engine died',
      deterministic: false,
    });
    expect(classifyHostLine(data({ error: { message: 'odd', code: 200 } }))).toMatchObject({ status: 500 });
    expect(classifyHostLine(data({ error: true }))).toEqual({
      kind: 'error',
      status: 500,
      message: '',
      deterministic: false,
    });
  });

  it('keeps at most 500 characters of the message', () => {
    const line = data({ error: { message: 'x'.repeat(2_000), code: 400 } });
    const result = classifyHostLine(line);
    expect(result.kind === 'error' && result.message).toBe('x'.repeat(500));
  });

  it('is not an error event when the error is null or the line carries choices', () => {
    expect(kindOf(data({ error: null, choices: [{ index: 0, delta: { content: 'a' } }] }))).toBe('content');
    expect(
      kindOf(data({ error: { code: 500 }, choices: [{ index: 0, delta: { role: 'assistant' } }] })),
    ).toBe('preamble');
  });
});

describe('mayBeError', () => {
  it('flags every line carrying an "error" key and no ordinary chunk', () => {
    expect(mayBeError(data({ error: { code: 500 } }))).toBe(true);
    expect(mayBeError(bytes('data: {"error": "boom"}'))).toBe(true);
    expect(mayBeError(data(chunk({ content: 'no error here' })))).toBe(false);
    expect(mayBeError(data(chunk({ content: 'the "error" was mine' })))).toBe(false);
    expect(mayBeError(bytes(': keep-alive'))).toBe(false);
  });
});
