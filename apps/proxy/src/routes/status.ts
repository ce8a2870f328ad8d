import {
  checkInfrastructure,
  decodePoolState,
  GATEWAY_VERSION,
  type GatewayConfig,
  type Infrastructure,
  type PoolEscrowState,
  redisKeys,
} from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';

export interface StatusRouteOptions {
  config: GatewayConfig;
  infra: Pick<Infrastructure, 'database' | 'redis'>;
}

async function readPool(options: StatusRouteOptions): Promise<PoolEscrowState[]> {
  const keys = redisKeys(options.config.redis.keyPrefix);
  const { redis } = options.infra;
  const models = await redis.smembers(keys.poolModels);
  const ids = (await Promise.all(models.map((m) => redis.smembers(keys.poolModel(m))))).flat();
  const hashes = await Promise.all(ids.map((id) => redis.hgetall(keys.poolEscrow(BigInt(id)))));
  return hashes.map(decodePoolState).filter((s): s is PoolEscrowState => s !== null);
}

/**
 * GET /v1/status (spec §2.8): unauthenticated, used as the container health check. 503 when
 * Postgres or Redis does not answer, so an orchestrator can tell a broken replica.
 */
export async function statusRoute(app: FastifyInstance, options: StatusRouteOptions): Promise<void> {
  app.get('/v1/status', { logLevel: 'warn' }, async (_request, reply) => {
    const checks = await checkInfrastructure(options.infra);
    const healthy = checks.postgres && checks.redis;
    const pool = checks.redis ? await readPool(options).catch(() => []) : [];
    const models: Record<string, { escrows: number; capacity_weight: number }> = {};
    for (const entry of pool) {
      const m = models[entry.modelId] ?? { escrows: 0, capacity_weight: 0 };
      m.escrows++;
      m.capacity_weight += entry.capacityWeight;
      models[entry.modelId] = m;
    }
    const { config } = options;
    return reply.status(healthy ? 200 : 503).send({
      status: healthy ? 'ok' : 'degraded',
      instance: config.instanceName,
      replica_id: config.proxy.replicaId,
      version: GATEWAY_VERSION,
      mode: config.escrowMode.kind === 'single' ? 'single' : 'pool',
      checks,
      runtimes: pool
        .filter((e) => e.owner === config.proxy.replicaId)
        .map((e) => ({ escrow_id: e.escrowId.toString(), model_id: e.modelId, status: e.status })),
      capacity: { models },
      devshards: pool.map((e) => ({
        escrow_id: e.escrowId.toString(),
        model_id: e.modelId,
        status: e.status,
        owner: e.owner,
        nonce: e.nonce.toString(),
        balance_estimate: e.balanceEstimate.toString(),
        capacity: { weight: e.capacityWeight },
      })),
      active_requests: app.activeRequests(),
    });
  });
}
