// The account stage (architecture §5): what a chat request holds from admission to its end — its
// fleet-wide admission ticket, its stored key's budget reservation, its place in chat_in_flight —
// and what it leaves behind: the release, the budget settled with the served cost, the usage event
// and the request metrics. Every ending goes through finish(), once: an answer, an error, a client
// that left, a forward to the owner replica (whose response's end releases the ticket here).
import { performance } from 'node:perf_hooks';
import type { InferenceCost } from '@gonka-gateway/devshard/session';
import type { OwnedSessions } from '@gonka-gateway/escrow-runtime';
import { holdForTurn, inOneWrite, type RedisKeys } from '@gonka-gateway/shared';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import type { ProxyMetrics } from '../proxy-metrics.js';
import type { Admission, KeyAdmission } from './admission.js';
import type { ChatPlan } from './request-plan.js';
import { type AttemptRecord, sendUsage } from './usage-events.js';

export interface AccountDeps {
  readonly admission: Admission;
  readonly metrics: ProxyMetrics;
  readonly redis: Redis;
  readonly keys: RedisKeys;
  readonly replicaId: string;
  readonly sessions: Pick<OwnedSessions, 'inferenceCost'>;
}

/** What an answered request reports (the serve stage's outcome). */
export interface Served {
  readonly status: number;
  readonly escrowId: bigint | undefined;
  readonly nonces: readonly bigint[];
  readonly inputTokens: number | undefined;
  readonly outputTokens: number;
  readonly ttftMs: number | undefined;
  readonly upstreamMs: number;
  readonly attempts: readonly AttemptRecord[];
}

export class RequestAccount {
  readonly #started = performance.now();
  #finished = false;
  /** Forwarded: the owner replica settles the budget and sends the usage event. */
  #forwarded = false;

  constructor(
    private readonly deps: AccountDeps,
    private readonly request: FastifyRequest,
    reply: FastifyReply,
    private readonly plan: ChatPlan,
    /** This replica's admission ticket (none on a forwarded hop: the admitting replica holds it). */
    readonly ticket: string | undefined,
    /** The ticket whose budget reservation this replica settles (its own, or the admitting one's). */
    private readonly settleTicket: string | undefined,
  ) {
    deps.metrics.chatStarted();
    // The safety net: a request that ends any other way (client gone, forwarded, thrown) still
    // releases what it holds when its response closes.
    reply.raw.once('close', () => {
      deps.metrics.chatEnded();
      this.finish(undefined);
    });
  }

  get keyLimits(): KeyAdmission | undefined {
    return this.plan.keyLimits;
  }

  /** The request went to the owner replica: it answers, settles and records; we only release. */
  forwarded(): void {
    this.#forwarded = true;
  }

  /**
   * Ends the request: admission release, budget settle (with the served nonce's cost) and usage event
   * in one Redis socket write; `served` undefined for a request nothing served here. Idempotent.
   * They leave at the end of this event-loop turn, with the other requests' commands of the turn,
   * never held for a later request's write: the settle and the usage event carry money, and a
   * replica that crashed would lose what it held (docs/performance.md, "Holding the closing
   * commands", "Where a request's CPU goes").
   */
  finish(served: Served | undefined): void {
    if (this.#finished) return;
    this.#finished = true;
    const { deps, plan } = this;
    const cost = served ? this.#cost(served) : undefined;
    const totalMs = performance.now() - this.#started;
    if (served) {
      deps.metrics.countRequest(
        {
          route: plan.escrowId === undefined ? 'pooled' : 'escrow',
          model: plan.model,
          status: String(served.status),
        },
        served.inputTokens ?? plan.inputTokens,
        served.outputTokens,
      );
      deps.metrics.addedLatency.observe(Math.max(0, totalMs - served.upstreamMs));
      deps.metrics.upstreamLatency.observe(served.upstreamMs);
      if (served.ttftMs !== undefined) deps.metrics.timeToFirstToken.observe(served.ttftMs);
    }
    // Sent in this turn's write, with the other requests' commands of the turn
    // (packages/shared redis/one-write.ts).
    holdForTurn(deps.redis);
    inOneWrite(deps.redis, () => {
      if (this.ticket !== undefined) void deps.admission.release(this.ticket).catch(() => undefined);
      if (!this.#forwarded) this.#settle(cost?.cost ?? 0n, served);
      if (served) this.#usage(served, cost, totalMs);
    });
  }

  #cost(served: Served): InferenceCost | undefined {
    const nonce = served.nonces.at(-1);
    if (served.escrowId === undefined || nonce === undefined) return undefined;
    return this.deps.sessions.inferenceCost(served.escrowId, nonce);
  }

  #settle(cost: bigint, served: Served | undefined): void {
    const limits = this.plan.keyLimits;
    if (!limits || this.settleTicket === undefined) return;
    const used = served ? (served.inputTokens ?? this.plan.inputTokens) + served.outputTokens : undefined;
    void this.deps.admission
      .settle(this.settleTicket, limits, cost, used)
      .catch((error: Error) => this.request.log.warn({ err: error }, 'budget settle failed'));
  }

  #usage(served: Served, cost: InferenceCost | undefined, totalMs: number): void {
    const caller = this.request.caller;
    void sendUsage(this.deps.redis, this.deps.keys, {
      requestId: this.request.id,
      keyId: caller.kind === 'admin' || caller.kind === 'user' ? caller.keyId : 'none',
      model: this.plan.model,
      escrowId: served.escrowId?.toString(),
      nonces: served.nonces,
      inputTokens: served.inputTokens ?? this.plan.inputTokens,
      outputTokens: served.outputTokens,
      status: served.status,
      totalMs,
      ttftMs: served.ttftMs,
      replicaId: this.deps.replicaId,
      cost,
      ...(served.attempts.length > 0 ? { attempts: served.attempts } : {}),
    }).catch((error: Error) => this.request.log.warn({ err: error }, 'usage event not sent'));
  }
}
