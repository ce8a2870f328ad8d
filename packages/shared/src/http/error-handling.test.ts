import type { AddressInfo } from 'node:net';
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
  a.post('/finalize', async (request) => ({ body: request.body ?? null }));
  a.delete('/thing', async () => ({ deleted: true }));
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

  it('reads an empty body as no body whatever its content type; a route that needs one says so', async () => {
    const a = await app();
    for (const type of [
      'application/json',
      'application/json; charset=utf-8',
      'text/plain',
      'application/x-www-form-urlencoded',
    ]) {
      const res = await a.inject({
        method: 'POST',
        url: '/finalize',
        headers: { 'content-type': type },
        payload: '',
      });
      expect(res.statusCode, type).toBe(200);
      // text/plain keeps Fastify's own parser: an empty string.
      expect([null, '']).toContain(res.json().body);
    }
    const del = await a.inject({
      method: 'DELETE',
      url: '/thing',
      headers: { 'content-type': 'application/json' },
      payload: '',
    });
    expect(del.statusCode).toBe(200);
    const typed = await a.inject({
      method: 'POST',
      url: '/typed',
      headers: { 'content-type': 'application/json' },
      payload: '',
    });
    expect(typed.statusCode).toBe(400);
    expect(typed.json().error.code).toBe('invalid_request');
    const form = await a.inject({
      method: 'POST',
      url: '/finalize',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'a=1',
    });
    expect(form.statusCode).toBe(415);
    expect(form.json().error.code).toBe('unsupported_media_type');
  });

  it('answers a body over the limit with a 413 the client receives, not a reset', async () => {
    const a = await app();
    await a.listen({ host: '127.0.0.1', port: 0 });
    const url = `http://127.0.0.1:${(a.server.address() as AddressInfo).port}/typed`;
    try {
      const big = Buffer.alloc(8 * 1024 * 1024, 0x61);
      // With a content-length, and as a chunked upload whose size is learned while reading it.
      const sized = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: big,
      });
      const chunked = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: new ReadableStream({
          start(controller) {
            for (let at = 0; at < big.length; at += 64 * 1024)
              controller.enqueue(big.subarray(at, at + 64 * 1024));
            controller.close();
          },
        }),
        duplex: 'half',
      } as RequestInit);
      for (const res of [sized, chunked]) {
        expect(res.status).toBe(413);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('body_too_large');
      }
    } finally {
      await a.close();
    }
  });
});
