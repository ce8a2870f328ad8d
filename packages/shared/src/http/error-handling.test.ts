import { describe, expect, it } from 'vitest';
import { GatewayError } from '../errors.js';
import { errorHandling } from './error-handling.js';
import { createFastify } from './server-options.js';

async function app() {
  const a = createFastify(undefined, { bodyLimit: 64 });
  await a.register(errorHandling);
  a.post(
    '/typed',
    { schema: { body: { type: 'object', required: ['model'], properties: { model: { type: 'string' } } } } },
    async () => ({ ok: true }),
  );
  a.get('/gateway-error', async () => {
    throw new GatewayError('admin_key_required', 'model m requires an admin API key');
  });
  a.get('/bug', async () => {
    throw new Error('secret internal detail');
  });
  return a;
}

describe('error handling', () => {
  it('returns GatewayErrors in the OpenAI shape with their status', async () => {
    const res = await (await app()).inject({ method: 'GET', url: '/gateway-error' });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({
      error: {
        message: 'model m requires an admin API key',
        type: 'authentication_error',
        param: null,
        code: 'admin_key_required',
      },
    });
  });

  it('hides unexpected errors behind a generic 500', async () => {
    const res = await (await app()).inject({ method: 'GET', url: '/bug' });
    expect(res.statusCode).toBe(500);
    expect(res.body).not.toContain('secret internal detail');
    expect(res.json().error.code).toBe('internal_error');
  });

  it('maps schema violations, bad JSON, oversized bodies and unknown routes', async () => {
    const a = await app();
    const invalid = await a.inject({ method: 'POST', url: '/typed', payload: { model: 5 } });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json().error).toMatchObject({ code: 'invalid_request', param: 'model' });
    const badJson = await a.inject({
      method: 'POST',
      url: '/typed',
      headers: { 'content-type': 'application/json' },
      payload: '{"model":',
    });
    expect(badJson.statusCode).toBe(400);
    expect(badJson.json().error.code).toBe('invalid_json');
    const big = await a.inject({ method: 'POST', url: '/typed', payload: { model: 'x'.repeat(200) } });
    expect(big.statusCode).toBe(413);
    expect(big.json().error.code).toBe('body_too_large');
    const missing = await a.inject({ method: 'GET', url: '/nope?x=1' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error).toMatchObject({ code: 'not_found', message: 'no route for GET /nope' });
  });
});
