import { checkInfrastructure, GATEWAY_VERSION, type Infrastructure } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';

/** GET /internal/health: the controller's own liveness, for the compose file and the proxy. */
export async function healthRoute(
  app: FastifyInstance,
  options: { infra: Pick<Infrastructure, 'database' | 'redis'> },
): Promise<void> {
  app.get('/internal/health', { logLevel: 'warn' }, async (_request, reply) => {
    const checks = await checkInfrastructure(options.infra);
    const healthy = checks.postgres && checks.redis;
    return reply
      .status(healthy ? 200 : 503)
      .send({ status: healthy ? 'ok' : 'degraded', version: GATEWAY_VERSION, checks });
  });
}
