import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyInstance {
    /** Requests this replica is serving right now (excluding health and metrics scrapes). */
    activeRequests(): number;
  }
}

const UNCOUNTED = new Set(['/v1/status', '/metrics']);

export const activeRequests = fp(
  async (app: FastifyInstance) => {
    let count = 0;
    const counted = new WeakSet<object>();
    app.decorate('activeRequests', () => count);
    app.addHook('onRequest', async (request) => {
      if (UNCOUNTED.has(request.routeOptions.url ?? '')) return;
      counted.add(request);
      count++;
    });
    // onResponse also runs for aborted requests, so the count cannot leak.
    app.addHook('onResponse', async (request) => {
      if (counted.delete(request)) count--;
    });
  },
  { name: 'active-requests' },
);
