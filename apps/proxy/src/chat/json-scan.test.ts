import type { GatewayError } from '@gonka-gateway/shared';
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, scanJsonBody } from './json-scan.js';

function refusal(raw: Buffer | string): GatewayError | undefined {
  try {
    scanJsonBody(Buffer.isBuffer(raw) ? raw : Buffer.from(raw));
    return undefined;
  } catch (error) {
    return error as GatewayError;
  }
}

describe('the raw body checks before JSON.parse', () => {
  it('passes an ordinary request, escapes and brackets inside strings included', () => {
    const body = JSON.stringify({
      model: 'm',
      messages: [{ role: 'user', content: 'a "quoted" {[ text ]} \\ with \u00e9 and 😀' }],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
    });
    expect(refusal(body)).toBeUndefined();
    // The same key in two different objects is not a duplicate.
    expect(refusal('{"a":{"x":1},"b":{"x":2},"c":[{"x":1},{"x":2}]}')).toBeUndefined();
  });

  it('refuses a key given twice, naming where', () => {
    expect(refusal('{"model":"a","model":"b"}')?.toBody().error).toMatchObject({
      code: 'invalid_request',
      param: 'model',
    });
    const nested = refusal('{"messages":[{"role":"user"},{"role":"user","content":"x","content":"y"}]}');
    expect(nested?.param).toBe('messages[1].content');
    // An escaped spelling of the same key is the same key.
    expect(refusal('{"max_tokens":1,"max\\u005ftokens":9000}')?.param).toBe('max_tokens');
  });

  it(`refuses nesting deeper than ${MAX_JSON_DEPTH} levels`, () => {
    expect(refusal(`${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}`)).toBeUndefined();
    const deep = refusal(`{"a":${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}}`);
    expect(deep?.status).toBe(400);
    expect(deep?.message).toContain(`${MAX_JSON_DEPTH} levels`);
    // A million brackets cost one pass, not a stack overflow.
    expect(refusal('['.repeat(1_000_000))?.status).toBe(400);
  });

  it('refuses bytes that are not UTF-8', () => {
    const raw = Buffer.concat([Buffer.from('{"model":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
    expect(refusal(raw)?.code).toBe('invalid_json');
  });

  it('leaves malformed JSON to JSON.parse', () => {
    expect(refusal('{"model": ')).toBeUndefined();
    expect(refusal('"unterminated')).toBeUndefined();
  });
});
