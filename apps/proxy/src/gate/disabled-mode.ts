// Disabled gateway (spec §3.3, §7): every request answers HTTP 308 with `Location: new_url` and JSON
// {status, message, new_url}, except admin, debug and finalize routes called with the admin key,
// which keep working. Liveness, readiness, status and metrics stay up so orchestrators and Prometheus
// still see the replica (the container health check calls /v1/status, spec §2.10).
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { SettingsSource } from './settings.js';

const OPERATIONAL = new Set(['/healthz', '/readyz', '/metrics', '/v1/status']);
const ADMIN_PATH = /^\/(v1\/admin\/|v1\/debug\/|v1\/finalize$|devshard\/[^/]*\/v1\/finalize$)/;

export function isAdminPath(path: string): boolean {
  return ADMIN_PATH.test(path);
}

export const disabledMode = fp(
  async (app: FastifyInstance, options: { settings: SettingsSource }) => {
    // A callback hook: an enabled gateway passes without a promise per request.
    app.addHook('onRequest', (request, reply, done) => {
      const disabled = options.settings.current.disabled;
      if (!disabled.enabled) return done();
      const path = request.url.split('?')[0] ?? '/';
      if (OPERATIONAL.has(path)) return done();
      if (request.caller.kind === 'admin' && isAdminPath(path)) return done();
      const newUrl = disabled.newUrl ?? '';
      if (newUrl) reply.header('location', newUrl);
      // Answered here: the request goes no further (done is not called).
      reply.status(308).send({ status: 'disabled', message: disabled.message, new_url: newUrl });
    });
  },
  { name: 'disabled-mode', dependencies: ['authentication'] },
);
