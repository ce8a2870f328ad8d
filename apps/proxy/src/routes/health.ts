// GET /healthz (liveness: the process answers) and GET /readyz (readiness: Postgres and Redis answer
// and the pool snapshot has been loaded, so this replica can route).
import { checkInfrastructure, type Infrastructure } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import type { PoolSnapshot } from '../ownership/pool-snapshot.js';

export async function healthRoutes(
  app: FastifyInstance,
  o: { infra: Pick<Infrastructure, 'database' | 'redis'>; pool: PoolSnapshot },
): Promise<void> {
  app.get('/healthz', { logLevel: 'warn' }, async () => ({ status: 'ok' }));
  app.get('/readyz', { logLevel: 'warn' }, async (_request, reply) => {
    const checks = { ...(await checkInfrastructure(o.infra)), pool: o.pool.loaded };
    const ready = checks.postgres && checks.redis && checks.pool;
    return reply.status(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', checks });
  });
}
