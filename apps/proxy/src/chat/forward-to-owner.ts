// A replica that owns no usable escrow for the model forwards the request to a replica that does
// (architecture §2.4), streamed with @fastify/reply-from, at most one hop. The hop is
// marked with an HMAC of the request id under the admin key digest, which every replica holds, so a
// client cannot claim a request was already admitted elsewhere.
//
// Funding: owners whose escrows look able to fund the request by the pool's balance estimate are
// preferred (the owner decides exactly, pick-escrow.ts); when nothing here could fund it and no
// owner elsewhere is left, the answer is 503 `insufficient_escrow_funds`, never a nonce.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { DEPLETION_THRESHOLD, GatewayError, type PoolEscrowState } from '@gonka-gateway/shared';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PoolSnapshot } from '../ownership/pool-snapshot.js';
import type { ProxyMetrics } from '../proxy-metrics.js';
import type { FundingShortfall } from './pick-escrow.js';
import type { RequestAccount } from './request-account.js';
import type { ChatPlan } from './request-plan.js';

export const HOP_HEADER = 'x-gateway-hop';
/** The admitting replica's admission ticket, read only on a valid hop: the owner settles its budget. */
export const TICKET_HEADER = 'x-gateway-admission-ticket';

export function hopToken(secret: Buffer, requestId: string): string {
  return createHmac('sha256', secret).update(requestId).digest('hex');
}

export function isValidHop(secret: Buffer, requestId: string, presented: unknown): boolean {
  if (typeof presented !== 'string' || presented.length !== 64) return false;
  return timingSafeEqual(Buffer.from(hopToken(secret, requestId)), Buffer.from(presented));
}

/**
 * Owner URLs that refused a connection a moment ago. A replica killed without a goodbye stays in the
 * pool and the replica directory until its lease expires (GATEWAY_LEASE_TTL_MS); until then a forward
 * to it fails at connect. Skipping it for a few seconds sends the next requests to the live owners
 * instead of answering 503 for the whole lease.
 */
export class UnreachableOwners {
  readonly #until = new Map<string, number>();
  constructor(private readonly holdMs = 5_000) {}

  mark(url: string, now = Date.now()): void {
    this.#until.set(url, now + this.holdMs);
  }

  has(url: string, now = Date.now()): boolean {
    const until = this.#until.get(url);
    if (until === undefined) return false;
    if (until > now) return true;
    this.#until.delete(url);
    return false;
  }
}

/**
 * True when a forward failed before the owner could have read the request (refused, unreachable,
 * connect timeout), so sending it to another owner cannot serve it twice. A reset or a timeout after
 * the request left is not retried: the owner may have started the inference.
 */
export function neverReachedOwner(error: { code?: string; cause?: unknown }): boolean {
  if (error.code === 'UND_ERR_CONNECT_TIMEOUT') return true;
  const cause = error.cause as { code?: string } | undefined;
  return cause?.code === 'ECONNREFUSED' || cause?.code === 'EHOSTUNREACH' || cause?.code === 'ENETUNREACH';
}

/**
 * An owner replica's internal URL for the model (or one escrow), other than this replica: among the
 * escrows `prefer` accepts when there are any, else among all.
 */
export function ownerUrl(
  pool: PoolSnapshot,
  selfId: string,
  match: (e: PoolEscrowState) => boolean,
  skip: (url: string) => boolean = () => false,
  prefer: (e: PoolEscrowState) => boolean = () => true,
): string | undefined {
  let candidates: { url: string; weight: number; preferred: boolean }[] = [];
  for (const e of pool.escrows) {
    if (!match(e) || e.status !== 'active' || !e.owner || e.owner === selfId) continue;
    const url = pool.replicaUrl(e.owner);
    if (url && !skip(url))
      candidates.push({ url, weight: Math.max(1, e.capacityWeight), preferred: prefer(e) });
  }
  if (candidates.some((c) => c.preferred)) candidates = candidates.filter((c) => c.preferred);
  if (candidates.length === 0) return undefined;
  // Weighted by capacity: the owners balance their own escrows; this spreads between owners.
  let r = Math.random() * candidates.reduce((s, c) => s + c.weight, 0);
  for (const c of candidates) {
    r -= c.weight;
    if (r <= 0) return c.url;
  }
  return candidates[candidates.length - 1]!.url;
}

const RETRY_SHORTLY = { 'retry-after': '1', 'x-should-retry': 'true' };

export interface ForwardDeps {
  readonly pool: PoolSnapshot;
  readonly replicaId: string;
  /** Secret of the forwarding hop (the admin key digest every replica holds). */
  readonly hopSecret: Buffer;
  readonly unreachable: UnreachableOwners;
  readonly metrics: ProxyMetrics;
  /** The model's token price (the key directory's), for the pool's funding estimate. */
  readonly tokenPrice: (model: string) => bigint | undefined;
}

/**
 * Whether a pool entry looks able to fund the request: its balance estimate is above the serving
 * minimum and covers (input + max_tokens) × price. An estimate only (the fee and the floor are the
 * owner's to add); the owner decides exactly.
 */
export function mayFund(
  e: PoolEscrowState,
  plan: Pick<ChatPlan, 'inputTokens' | 'maxTokens'>,
  price?: bigint,
): boolean {
  if (e.balanceEstimate < DEPLETION_THRESHOLD) return false;
  return price === undefined || e.balanceEstimate >= BigInt(plan.inputTokens + plan.maxTokens) * price;
}

/** The 503 of a request no escrow of its model can fund (spec §7 "error body format: not shown"). */
export function insufficientFunds(
  plan: Pick<ChatPlan, 'model' | 'maxTokens'>,
  s: FundingShortfall,
): GatewayError {
  const which =
    s.escrows === 1
      ? `the 1 escrow of model ${plan.model} tried cannot fund this request`
      : `none of the ${s.escrows} escrows of model ${plan.model} tried can fund this request`;
  return new GatewayError(
    'insufficient_escrow_funds',
    `${which}: with max_tokens ` +
      `${plan.maxTokens} it needs ${s.needed} ngonka and the most one can reserve now is ${s.available}; ` +
      'lower max_tokens or retry later',
    { param: 'max_tokens' },
  );
}

/** Retry-After of a request no escrow can fund now: reservations in flight return within seconds. */
const UNFUNDED_RETRY_AFTER = '10';

/**
 * Sends the request to an owner replica (nothing local could start it). An owner that never read the
 * request (refused, unreachable) is skipped for a few seconds and the next live owner is tried; an
 * owner that failed after reading it is answered as a retryable 503, never a bare 500. Without an
 * owner: 503 with Retry-After, `insufficient_escrow_funds` when escrows here could not fund the
 * request, else `no_escrow_available`.
 */
export function forwardToOwner(
  deps: ForwardDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  plan: ChatPlan,
  account: RequestAccount,
  hop: boolean,
  /** Escrows here that could start the request but cannot fund it (serve/attempt-race.ts). */
  unfunded?: FundingShortfall,
): FastifyReply {
  const owners = (e: PoolEscrowState) =>
    plan.escrowId !== undefined ? e.escrowId === plan.escrowId : e.modelId === plan.model;
  const skip = (u: string) => deps.unreachable.has(u);
  const price = deps.tokenPrice(plan.model);
  const funds = (e: PoolEscrowState) => mayFund(e, plan, price);
  const refuse = (error: GatewayError, headers: Record<string, string>) => {
    account.finish(undefined);
    return reply
      .status(error.status)
      .headers({ ...plan.headers, ...headers })
      .send(error.toBody());
  };
  // At most one hop: an owner that cannot serve answers itself.
  const url =
    hop || account.ticket === undefined
      ? undefined
      : ownerUrl(deps.pool, deps.replicaId, owners, skip, funds);
  if (!url) {
    // Owners exist but each refused a connection a moment ago: the answer of a refused forward, not
    // "no escrow" (the pool still lists them until their leases expire).
    if (!hop && account.ticket !== undefined && ownerUrl(deps.pool, deps.replicaId, owners) !== undefined) {
      return refuse(ownerDidNotAnswer(), RETRY_SHORTLY);
    }
    if (unfunded) return refuse(insufficientFunds(plan, unfunded), { 'retry-after': UNFUNDED_RETRY_AFTER });
    return refuse(new GatewayError('no_escrow_available', `no escrow can serve model ${plan.model} now`), {
      'retry-after': '10',
    });
  }
  account.forwarded();
  // Once per request, not per owner tried: the forwarded share is this over requests_total.
  deps.metrics.forwarded.inc();
  const ticket = account.ticket;
  const send = (target: string, r: FastifyReply): FastifyReply =>
    r.from(`${target}${request.url}`, {
      // With a content type, reply-from sends the bytes as they are (no JSON.stringify).
      body: plan.clientBody,
      contentType: 'application/json',
      onError: (failed, { error }) => {
        request.log.warn({ err: error }, 'forward to the owner replica failed');
        if (failed.sent) return;
        // An owner that died keeps its escrows in the pool until its lease expires: one that never
        // read the request is skipped, and the request goes to another live owner.
        if (neverReachedOwner(error as { code?: string; cause?: unknown })) {
          deps.unreachable.mark(target);
          const next = ownerUrl(deps.pool, deps.replicaId, owners, skip, funds);
          if (next) {
            send(next, failed as FastifyReply);
            return;
          }
        }
        const e = ownerDidNotAnswer();
        void (failed as FastifyReply).status(e.status).headers(RETRY_SHORTLY).send(e.toBody());
      },
      rewriteRequestHeaders: (_req, h) => ({
        ...h,
        'x-request-id': request.id,
        [HOP_HEADER]: hopToken(deps.hopSecret, request.id),
        ...(ticket !== undefined ? { [TICKET_HEADER]: ticket } : {}),
      }),
      // The owner does not know this replica's rate-limit state: its headers are added here.
      rewriteHeaders: (h) => ({ ...h, ...plan.headers }),
    });
  return send(url, reply);
}

function ownerDidNotAnswer(): GatewayError {
  return new GatewayError('service_unavailable', 'the owner replica did not answer; retry shortly');
}
