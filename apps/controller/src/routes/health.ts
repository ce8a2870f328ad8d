import { checkInfrastructure, GATEWAY_VERSION, type Infrastructure } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';

/** GET /internal/health: the controller's own liveness, for the compose file and the proxy. */
export async function healthRoute(
  app: FastifyInstance,
  options: {
    infra: Pick<Infrastructure, 'database' | 'redis'>;
    /** Which controller answers and whether it leads (holds the leader lease, runs schedules). */
    role?: () => { controller_id: string; leader: boolean };
  },
): Promise<void> {
  app.get('/internal/health', { logLevel: 'warn' }, async (_request, reply) => {
    const checks = await checkInfrastructure(options.infra);
    const healthy = checks.postgres && checks.redis;
    return reply.status(healthy ? 200 : 503).send({
      status: healthy ? 'ok' : 'degraded',
      version: GATEWAY_VERSION,
      checks,
      ...(options.role ? options.role() : {}),
    });
  });
}
