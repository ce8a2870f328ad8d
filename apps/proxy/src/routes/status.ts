// GET /v1/status (spec §2.8): unauthenticated (the container health check), no
// credentials in it. The fleet's view from the pool snapshot (Redis): runtimes owned here,
// capacity per model, every devshard with its limiter, capacity, owner, nonce, nonce ceiling
// (max_nonce) and routing stop, balance, reserved and status (`held`: below the serving minimum until its in-flight reservations resolve, not
// routed; controller upkeep/escrow-hold.ts), the live replicas, the admission limiter, and the
// devshard protocol versions (approved by the chain, spoken here, bound by a new escrow), and the
// escrows whose settle window closed unsettled with their amounts (`settle_window_closed`, written
// by the controller's rotation tick; null before it ran); 503 when Postgres or Redis does not answer.

import { SUPPORTED_PROTOCOL_VERSIONS } from '@gonka-gateway/devshard/session';
import type { ApprovedVersions, OwnedSessions } from '@gonka-gateway/escrow-runtime';
import {
  checkInfrastructure,
  GATEWAY_VERSION,
  type GatewayConfig,
  type Infrastructure,
  readSettleWindowSummary,
  redisKeys,
  UNKNOWN_CEILING_ROUTING_STOP,
} from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import type { Admission } from '../chat/admission.js';
import type { PoolSnapshot } from '../ownership/pool-snapshot.js';

export interface StatusRouteOptions {
  readonly config: GatewayConfig;
  readonly infra: Pick<Infrastructure, 'database' | 'redis'>;
  readonly pool: PoolSnapshot;
  readonly sessions: OwnedSessions | undefined;
  readonly admission: Admission;
  /** The chain's approved_versions as last read; `protocol` never waits for the node. */
  readonly versions?: Pick<ApprovedVersions, 'view'>;
}

export async function statusRoute(app: FastifyInstance, o: StatusRouteOptions): Promise<void> {
  app.get('/v1/status', { logLevel: 'warn' }, async (_request, reply) => {
    const checks = await checkInfrastructure(o.infra);
    const healthy = checks.postgres && checks.redis;
    if (checks.redis) await o.pool.refresh().catch(() => undefined);
    const fleetInFlight = checks.redis ? await o.admission.inFlight().catch(() => null) : null;
    // The controller's list of escrows whose settle window closed unsettled: one GET.
    const closedWindows = checks.redis
      ? await readSettleWindowSummary(o.infra.redis, redisKeys(o.config.redis.keyPrefix)).catch(() => null)
      : null;
    const owned = new Map((o.sessions?.list() ?? []).map((e) => [e.escrowId, e]));
    const pool = o.pool.escrows;
    const models: Record<string, { escrows: number; active: number; held: number; capacity_weight: number }> =
      {};
    for (const e of pool) {
      const m = models[e.modelId] ?? { escrows: 0, active: 0, held: 0, capacity_weight: 0 };
      m.escrows++;
      if (e.status === 'held') m.held++;
      if (e.status === 'active') {
        m.active++;
        m.capacity_weight += e.capacityWeight;
      }
      models[e.modelId] = m;
    }
    const { config } = o;
    const ownedByReplica = new Map<string, number>();
    for (const e of pool) if (e.owner) ownedByReplica.set(e.owner, (ownedByReplica.get(e.owner) ?? 0) + 1);
    return reply.status(healthy ? 200 : 503).send({
      status: healthy ? 'ok' : 'degraded',
      instance: config.instanceName,
      replica_id: config.proxy.replicaId,
      version: GATEWAY_VERSION,
      mode: config.escrowMode.kind === 'single' ? 'single' : 'pool',
      checks,
      protocol: protocolView(o.versions),
      runtimes: [...owned.values()].map((e) => ({
        escrow_id: e.escrowId.toString(),
        model_id: e.modelId,
        status: e.state,
        in_flight: e.inFlight,
        nonce: e.nonce?.toString() ?? null,
      })),
      capacity: { models },
      limiter: {
        max_concurrent_requests: config.limits.maxConcurrentRequests,
        max_input_tokens_in_flight: config.limits.maxInputTokensInFlight,
        in_flight: fleetInFlight,
      },
      devshards: pool.map((e) => {
        const here = owned.get(e.escrowId);
        return {
          escrow_id: e.escrowId.toString(),
          model_id: e.modelId,
          status: e.status,
          owner: e.owner,
          nonce: (here?.nonce ?? e.nonce).toString(),
          balance_estimate: (here?.balance ?? e.balanceEstimate).toString(),
          reserved: (e.reserved ?? 0n).toString(),
          // The escrow's max_nonce (null while its owner has not read it) and where routing stops.
          nonce_ceiling: (here ? here.nonceCeiling : e.nonceCeiling)?.toString() ?? null,
          routing_stop: (here?.routingStop ?? e.routingStop ?? UNKNOWN_CEILING_ROUTING_STOP).toString(),
          phase: here ? here.state : null,
          cause: e.cause ?? null,
          limiter: { in_flight: here?.inFlight ?? null },
          capacity: { weight: e.capacityWeight },
        };
      }),
      settle_window_closed: closedWindows && {
        escrows: closedWindows.escrows,
        total_amount: closedWindows.total_amount,
        updated_at: new Date(closedWindows.updated_at_ms).toISOString(),
      },
      replicas: o.pool.replicas.map((r) => ({
        id: r.replicaId,
        url: r.url,
        escrows_owned: ownedByReplica.get(r.replicaId) ?? 0,
      })),
      active_requests: app.activeRequests(),
    });
  });
}

/**
 * Devshard protocol versions (devshard-protocol.md §1, §11): what the chain approves (null until the
 * node answered once), what this gateway speaks, and what a new escrow binds to now.
 */
function protocolView(versions: StatusRouteOptions['versions']) {
  const view = versions?.view();
  return {
    approved: view?.approved ?? null,
    supported: view?.supported ?? SUPPORTED_PROTOCOL_VERSIONS,
    bound: view?.bound ?? null,
    approved_read_at: view?.readAtMs ? new Date(view.readAtMs).toISOString() : null,
  };
}
