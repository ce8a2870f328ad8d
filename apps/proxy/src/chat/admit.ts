// The admit stage (architecture §5): the PoC gate (DEVSHARD_POC_REQUEST_MODE=off), then fleet-wide
// admission — global concurrency and input tokens in flight, and a stored key's rpm, tpm,
// concurrency and budget — in one Redis script. Admission is taken once, by the replica the client
// reached; an owner replica trusts a signed forwarding hop (forward-to-owner.ts) and settles the
// budget reservation of the ticket the hop carries.
import { randomUUID } from 'node:crypto';
import { GatewayError } from '@gonka-gateway/shared';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ProxyMetrics } from '../proxy-metrics.js';
import type { Admission } from './admission.js';
import { TICKET_HEADER } from './forward-to-owner.js';
import { rateLimitHeaders, refusalOfLimit } from './key-limits.js';
import { type AccountDeps, RequestAccount } from './request-account.js';
import type { ChatPlan } from './request-plan.js';

export interface AdmitDeps extends AccountDeps {
  readonly admission: Admission;
  readonly metrics: ProxyMetrics;
  readonly replicaId: string;
  /** True while new requests must wait for the network's PoC to end. */
  readonly pocBlocks: () => boolean;
}

/** A refusal answered as is (no ticket was taken, nothing to release). */
export interface Refusal {
  readonly error: GatewayError;
  readonly headers: Record<string, string>;
}

export async function admitChat(
  deps: AdmitDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  plan: ChatPlan,
  forwarded: boolean,
): Promise<RequestAccount | Refusal> {
  if (deps.pocBlocks()) {
    return {
      error: new GatewayError('poc_active', 'the network is running PoC; retry shortly'),
      headers: { ...plan.headers, 'retry-after': '10' },
    };
  }
  if (forwarded) {
    const presented = request.headers[TICKET_HEADER];
    return new RequestAccount(
      deps,
      request,
      reply,
      plan,
      undefined,
      typeof presented === 'string' ? presented : undefined,
    );
  }
  // The ticket is ours, never the client's x-request-id: two requests must never share an entry.
  const admitted = await deps.admission
    .admit(`${deps.replicaId}:${randomUUID()}`, plan.inputTokens, plan.keyLimits)
    .catch((error: Error) => {
      throw new GatewayError('service_unavailable', 'admission is unavailable', { cause: error });
    });
  if (!admitted.admitted && 'retryAfterMs' in admitted && plan.stored) {
    deps.metrics.keyRejections.inc({ reason: admitted.reason });
    const refusal = refusalOfLimit(plan.stored, admitted.reason, admitted.retryAfterMs);
    return { error: refusal.error, headers: { ...plan.headers, ...refusal.headers } };
  }
  if (!admitted.admitted) {
    deps.metrics.admissionRejections.inc({ reason: admitted.reason });
    const limit = admitted.reason === 'concurrency' ? 'concurrency' : 'input-token';
    return {
      error: new GatewayError('capacity_exceeded', `the gateway is at its ${limit} limit; retry shortly`),
      headers: { 'retry-after': '1', 'x-should-retry': 'true' },
    };
  }
  if (plan.stored) Object.assign(plan.headers, rateLimitHeaders(plan.stored, admitted.rate));
  return new RequestAccount(deps, request, reply, plan, admitted.ticket, admitted.ticket);
}
