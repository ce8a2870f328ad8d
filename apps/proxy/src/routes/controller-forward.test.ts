// The forward to the controller: every forwarded path family reaches the controller with its method,
// headers and body unchanged, and the controller's answer comes back as it was.
import { createFastify } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controllerForward } from './controller-forward.js';

describe('controllerForward', () => {
  let controller: FastifyInstance;
  let proxy: FastifyInstance;
  beforeAll(async () => {
    controller = createFastify();
    controller.all('/*', async (request, reply) =>
      reply.status(209).send({
        method: request.method,
        url: request.url,
        authorization: request.headers.authorization ?? null,
        body: request.body ?? null,
      }),
    );
    const url = await controller.listen({ host: '127.0.0.1', port: 0 });
    proxy = createFastify();
    await proxy.register(controllerForward, { controllerUrl: url });
  });
  afterAll(async () => {
    await proxy?.close();
    await controller?.close();
  });

  it.each([
    ['GET', '/v1/requests/chatcmpl-42'],
    ['GET', '/v1/admin/hosts'],
    ['POST', '/v1/admin/hosts/gonka1aaaa/lift'],
    ['GET', '/v1/debug/rotation'],
    ['POST', '/v1/finalize'],
    ['GET', '/console'],
    ['GET', '/console/app.js'],
  ] as const)('%s %s reaches the controller', async (method, url) => {
    const res = await proxy.inject({
      method,
      url,
      headers: {
        authorization: 'Bearer sk-admin',
        ...(method === 'POST' ? { 'content-type': 'application/json' } : {}),
      },
      ...(method === 'POST' ? { payload: '{"model":"m"}' } : {}),
    });
    expect(res.statusCode).toBe(209);
    expect(res.json()).toEqual({
      method,
      url,
      authorization: 'Bearer sk-admin',
      body: method === 'POST' ? { model: 'm' } : null,
    });
  });
});
