import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Registry } from 'prom-client';

/** GET /metrics in the Prometheus text format, from the process's own registry. */
export const metricsRoute = fp<{ registry: Registry }>(
  async (app: FastifyInstance, { registry }) => {
    app.get('/metrics', { logLevel: 'warn' }, async (_request, reply) => {
      reply.header('content-type', registry.contentType);
      return registry.metrics();
    });
  },
  { name: 'metrics-route' },
);
