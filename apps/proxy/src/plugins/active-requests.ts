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
    // Callback hooks: no promise per request.
    app.addHook('onRequest', (request, _reply, done) => {
      // The path from the raw URL: request.routeOptions builds and freezes an object on every read.
      const url = request.url;
      const query = url.indexOf('?');
      if (!UNCOUNTED.has(query < 0 ? url : url.slice(0, query))) {
        counted.add(request);
        count++;
      }
      done();
    });
    // onResponse also runs for aborted requests, so the count cannot leak.
    app.addHook('onResponse', (request, _reply, done) => {
      if (counted.delete(request)) count--;
      done();
    });
  },
  { name: 'active-requests' },
);
