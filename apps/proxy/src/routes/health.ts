// GET /healthz (liveness: the process answers) and GET /readyz (readiness: this replica can route).
// Ready means: Postgres and Redis answer, the pool snapshot has been read (which escrows exist and
// who owns them) and the settings with the stored keys have been read (access modes, disabled mode,
// max_tokens; spec §2.4). Until then a chat could be answered 404 for a model the fleet serves, or
// against bootstrap settings an admin has changed, so the load balancer keeps the replica out
// (deploy/src/load-balancer.ts checks /readyz). Readiness never asks the chain or the public node:
// a replica that can route is ready while they are unreachable.
import { checkInfrastructure, type Infrastructure } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import type { SettingsSource } from '../gate/settings.js';
import type { PoolSnapshot } from '../ownership/pool-snapshot.js';

export async function healthRoutes(
  app: FastifyInstance,
  o: {
    infra: Pick<Infrastructure, 'database' | 'redis'>;
    pool: Pick<PoolSnapshot, 'loaded'>;
    settings: Pick<SettingsSource, 'loaded'>;
  },
): Promise<void> {
  app.get('/healthz', { logLevel: 'warn' }, async () => ({ status: 'ok' }));
  app.get('/readyz', { logLevel: 'warn' }, async (_request, reply) => {
    const checks = {
      ...(await checkInfrastructure(o.infra)),
      pool: o.pool.loaded,
      settings: o.settings.loaded,
    };
    const ready = checks.postgres && checks.redis && checks.pool && checks.settings;
    return reply.status(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', checks });
  });
}
