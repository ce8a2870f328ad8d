// POST /v1/chat/completions (pooled) and POST /devshard/{id}/v1/chat/completions (one escrow), in the
// order of architecture §5: auth and disabled mode already ran (gate/) → body limit and JSON → model
// and access → a stored key's expiry and models → max_tokens → admission (global and the key's own
// limits, one Lua script) → an owned escrow, or the owner replica → session → budget settle → usage.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import replyFrom from '@fastify/reply-from';
import type { OwnedSessions } from '@gonka-gateway/escrow-runtime';
import { GatewayError, type PoolEscrowState, type RedisKeys } from '@gonka-gateway/shared';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import type { KeyDirectory } from '../gate/key-directory.js';
import type { SettingsSource } from '../gate/settings.js';
import type { PoolSnapshot } from '../ownership/pool-snapshot.js';
import type { ProxyMetrics } from '../proxy-metrics.js';
import { type Admission, estimateInputTokens } from './admission.js';
import { bodyForHost, checkAccess, checkKey, decideMaxTokens } from './chat-policy.js';
import { type ChatBody, chatBodySchema, escrowParamsSchema } from './chat-schema.js';
import {
  HOP_HEADER,
  hopToken,
  isValidHop,
  neverReachedOwner,
  ownerUrl,
  TICKET_HEADER,
  UnreachableOwners,
} from './forward-to-owner.js';
import {
  checkStoredKey,
  keyAdmissionOf,
  rateLimitHeaders,
  refusalOfCheck,
  refusalOfLimit,
} from './key-limits.js';
import { inOneWrite } from './one-write.js';
import { serveOnSession } from './serve-on-session.js';
import { sendUsage, servedCost } from './usage-events.js';

export interface ChatRoutesOptions {
  readonly sessions: OwnedSessions;
  readonly pool: PoolSnapshot;
  readonly settings: SettingsSource;
  readonly keyDirectory: Pick<KeyDirectory, 'tokenPrice'>;
  readonly admission: Admission;
  readonly metrics: ProxyMetrics;
  readonly redis: Redis;
  readonly keys: RedisKeys;
  readonly replicaId: string;
  /** Secret of the forwarding hop (the admin key digest every replica holds). */
  readonly hopSecret: Buffer;
  readonly bodyLimit: number;
  /** True while new requests must wait for the network's PoC to end (DEVSHARD_POC_REQUEST_MODE=off). */
  readonly pocBlocks: () => boolean;
  readonly capacityAware: boolean;
  /** Attempts on a host failure before the first byte (default 2). */
  readonly maxAttempts?: number;
}

declare module 'fastify' {
  interface FastifyRequest {
    rawBody: Buffer | undefined;
  }
}

const RETRY_SHORTLY = { 'retry-after': '1', 'x-should-retry': 'true' };
const ownerDidNotAnswer = () =>
  new GatewayError('service_unavailable', 'the owner replica did not answer; retry shortly');

function sendError(reply: FastifyReply, error: GatewayError, headers: Record<string, string> = {}) {
  return reply.status(error.status).headers(headers).send(error.toBody());
}

export async function chatRoutes(app: FastifyInstance, o: ChatRoutesOptions): Promise<void> {
  const unreachable = new UnreachableOwners();
  await app.register(replyFrom, { undici: { connections: 128, pipelining: 1 } });
  app.decorateRequest('rawBody', undefined);
  // The exact bytes are kept: the host runs (and prompt_hash covers) what the client sent (§2.5).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer', bodyLimit: o.bodyLimit },
    (request, body, done) => {
      const raw = body as Buffer;
      request.rawBody = raw;
      try {
        done(null, JSON.parse(raw.toString('utf8')));
      } catch {
        done(new GatewayError('invalid_json', 'request body is not valid JSON'), undefined);
      }
    },
  );

  // A missing or wrong key is refused before the body is read (spec §5.1).
  app.addHook('onRequest', (request, _reply, done) => {
    try {
      checkKey(request.caller);
    } catch (error) {
      return done(error as Error);
    }
    done();
  });

  const handle = async (request: FastifyRequest, reply: FastifyReply, escrowId: bigint | undefined) => {
    const started = performance.now();
    const body = request.body as ChatBody;
    const settings = o.settings.current;
    checkAccess(request.caller, body.model, settings);
    const stored = request.caller.kind === 'user' ? request.caller.stored : undefined;
    if (stored) {
      const refused = checkStoredKey(stored, body.model, Date.now());
      if (refused) {
        o.metrics.keyRejections.inc({ reason: refused });
        throw refusalOfCheck(refused, body.model);
      }
    }
    if (body.n !== undefined && body.n > 1) {
      throw new GatewayError('invalid_request', 'n > 1 is not supported', { param: 'n' });
    }
    const forwarded = isValidHop(o.hopSecret, request.id, request.headers[HOP_HEADER]);
    if (escrowId === undefined) {
      const known =
        o.pool.models().has(body.model) || o.sessions.list().some((e) => e.modelId === body.model);
      if (!known) {
        throw new GatewayError('model_not_found', `The model \`${body.model}\` does not exist`, {
          param: 'model',
        });
      }
    } else {
      const inPool = o.pool.escrows.find((e) => e.escrowId === escrowId);
      const ownedHere = o.sessions.list().find((e) => e.escrowId === escrowId);
      if (!inPool && !ownedHere) throw new GatewayError('escrow_not_found', `no escrow ${escrowId}`);
      const model = ownedHere?.modelId ?? inPool?.modelId;
      if (model !== body.model) {
        throw new GatewayError('invalid_request', `escrow ${escrowId} serves ${model}`, { param: 'model' });
      }
    }
    const decision = decideMaxTokens(body, settings);
    const headers: Record<string, string> = {};
    if (decision.capped) headers['x-max-tokens-capped'] = String(decision.maxTokens);
    const raw = request.rawBody ?? Buffer.from(JSON.stringify(body));
    const hostBody = bodyForHost(raw, body, decision);
    const inputTokens = estimateInputTokens(raw.length);
    const keyLimits = stored
      ? keyAdmissionOf(
          stored,
          { inputTokens, maxTokens: decision.maxTokens, tokenPrice: o.keyDirectory.tokenPrice(body.model) },
          new Date(),
        )
      : undefined;

    if (o.pocBlocks()) {
      return sendError(reply, new GatewayError('poc_active', 'the network is running PoC; retry shortly'), {
        ...headers,
        'retry-after': '10',
      });
    }

    // Admission is taken once, by the replica the client reached; the owner trusts a signed hop.
    let ticket: string | undefined;
    if (!forwarded) {
      // The ticket is ours, never the client's x-request-id: two requests must never share an entry.
      const admitted = await o.admission
        .admit(`${o.replicaId}:${randomUUID()}`, inputTokens, keyLimits)
        .catch((error: Error) => {
          throw new GatewayError('service_unavailable', 'admission is unavailable', { cause: error });
        });
      if (!admitted.admitted && 'retryAfterMs' in admitted && stored) {
        o.metrics.keyRejections.inc({ reason: admitted.reason });
        const refusal = refusalOfLimit(stored, admitted.reason, admitted.retryAfterMs);
        return sendError(reply, refusal.error, { ...headers, ...refusal.headers });
      }
      if (!admitted.admitted) {
        o.metrics.admissionRejections.inc({ reason: admitted.reason });
        return sendError(
          reply,
          new GatewayError(
            'capacity_exceeded',
            `the gateway is at its ${admitted.reason === 'concurrency' ? 'concurrency' : 'input-token'} limit; retry shortly`,
          ),
          { 'retry-after': '1', 'x-should-retry': 'true' },
        );
      }
      ticket = admitted.ticket;
      if (stored) Object.assign(headers, rateLimitHeaders(stored, admitted.rate));
    }
    o.metrics.chatStarted();
    // One listener for what ends with the response however it ends (issue 10: a listener each cost
    // a closure and a wrapper per request). The release here covers requests that end another way
    // than the answer below.
    reply.raw.once('close', () => {
      o.metrics.chatEnded();
      if (ticket !== undefined) void o.admission.release(ticket).catch(() => undefined);
    });

    // The budget reservation is settled by the replica that serves (the owner, on a forward).
    const presented = request.headers[TICKET_HEADER];
    const settleTicket = forwarded ? (typeof presented === 'string' ? presented : undefined) : ticket;
    let settled = false;
    const settleBudget = (cost: bigint, usedTokens: number | undefined) => {
      if (settled || !keyLimits || settleTicket === undefined) return;
      settled = true;
      void o.admission
        .settle(settleTicket, keyLimits, cost, usedTokens)
        .catch((error: Error) => request.log.warn({ err: error }, 'budget settle failed'));
    };

    const outcome = await serveOnSession(
      request,
      reply,
      {
        model: body.model,
        body: hostBody,
        reservation: { inputTokens: BigInt(inputTokens), maxTokens: BigInt(decision.maxTokens) },
        stream: body.stream === true,
        ...(escrowId !== undefined ? { escrowId } : {}),
        maxAttempts: o.maxAttempts ?? 2,
        capacityAware: o.capacityAware,
        headers,
      },
      { sessions: o.sessions, metrics: o.metrics },
    ).catch((error: unknown) => {
      settleBudget(0n, undefined);
      throw error;
    });

    if (outcome.kind === 'not_here') {
      const owners = (e: PoolEscrowState) =>
        escrowId !== undefined ? e.escrowId === escrowId : e.modelId === body.model;
      const skip = (u: string) => unreachable.has(u);
      const url = forwarded || ticket === undefined ? undefined : ownerUrl(o.pool, o.replicaId, owners, skip);
      if (!url) {
        settleBudget(0n, undefined);
        // Owners exist but each refused a connection a moment ago: the same answer as a refused
        // forward, not "no escrow" (the pool still lists them until their leases expire).
        if (!forwarded && ticket !== undefined && ownerUrl(o.pool, o.replicaId, owners) !== undefined) {
          return sendError(reply, ownerDidNotAnswer(), { ...headers, ...RETRY_SHORTLY });
        }
        return sendError(
          reply,
          new GatewayError('no_escrow_available', `no escrow can serve model ${body.model} now`),
          { ...headers, 'retry-after': '10' },
        );
      }
      const forwardTo = (target: string, r: FastifyReply): FastifyReply => {
        o.metrics.forwarded.inc();
        return r.from(`${target}${request.url}`, {
          // With a content type, reply-from sends the bytes as they are (no JSON.stringify).
          body: hostBody,
          contentType: 'application/json',
          onError: (failed, { error }) => {
            request.log.warn({ err: error }, 'forward to the owner replica failed');
            if (failed.sent) return;
            // An owner that died keeps its escrows in the pool until its lease expires: one that
            // never read the request is skipped, and the request goes to another live owner.
            if (neverReachedOwner(error as { code?: string; cause?: unknown })) {
              unreachable.mark(target);
              const next = ownerUrl(o.pool, o.replicaId, owners, skip);
              if (next) {
                forwardTo(next, failed as FastifyReply);
                return;
              }
            }
            // The owner went away between the snapshot and the call: retryable, never a bare 500.
            void sendError(failed as FastifyReply, ownerDidNotAnswer(), RETRY_SHORTLY);
          },
          rewriteRequestHeaders: (_req, h) => ({
            ...h,
            'x-request-id': request.id,
            [HOP_HEADER]: hopToken(o.hopSecret, request.id),
            ...(ticket !== undefined ? { [TICKET_HEADER]: ticket } : {}),
          }),
          // The owner does not know this replica's rate-limit state: its headers are added here.
          rewriteHeaders: (h) => ({ ...h, ...headers }),
        });
      };
      return forwardTo(url, reply);
    }

    const totalMs = performance.now() - started;
    o.metrics.countRequest(
      {
        route: escrowId === undefined ? 'pooled' : 'escrow',
        model: body.model,
        status: String(outcome.status),
      },
      outcome.inputTokens ?? inputTokens,
      outcome.outputTokens,
    );
    o.metrics.addedLatency.observe(Math.max(0, totalMs - outcome.upstreamMs));
    o.metrics.upstreamLatency.observe(outcome.upstreamMs);
    if (outcome.ttftMs !== undefined) o.metrics.timeToFirstToken.observe(outcome.ttftMs);
    const cost = servedCost(o.sessions, outcome.escrowId, outcome.nonces);
    // The request's closing commands leave in one socket write (issue 10: each write costs the
    // process more than the commands): the admission release — the answer has been handed to the
    // socket, nothing of the request runs here any more; the close listener only covers requests
    // that end another way — the budget settle and the usage event.
    // They leave now. They are NOT held back to ride in the next admission's write, although that
    // would save one Redis write per request at c=1. A replica that crashes would lose held
    // commands, and two of these carry money. The usage event is the only record of the key a
    // served inference belongs to: Postgres has the nonce and its cost but not the key, so the
    // escrow reconciliation could only list it as unrecorded. The settle is the only charge to
    // the key's spend counter: a reservation nobody settles expires without being charged. Nor
    // does a held settle only over-count while it waits. The tokens used can exceed the tpm
    // charge (⌈bytes / 4⌉ undercounts 3-byte characters), and the cost can exceed the budget
    // reservation (it is 0 while no price for the model is known). So the settle can raise what
    // the next admission sees. Holding the release alone would be safe (it only frees), but it
    // would save no write. See docs/performance.md, "Holding the closing commands".
    inOneWrite(o.redis, () => {
      if (ticket !== undefined) void o.admission.release(ticket).catch(() => undefined);
      settleBudget(cost?.cost ?? 0n, (outcome.inputTokens ?? inputTokens) + outcome.outputTokens);
      void sendUsage(o.redis, o.keys, {
        requestId: request.id,
        keyId:
          request.caller.kind === 'admin' || request.caller.kind === 'user' ? request.caller.keyId : 'none',
        model: body.model,
        escrowId: outcome.escrowId?.toString(),
        nonces: outcome.nonces,
        inputTokens: outcome.inputTokens ?? inputTokens,
        outputTokens: outcome.outputTokens,
        status: outcome.status,
        totalMs,
        ttftMs: outcome.ttftMs,
        replicaId: o.replicaId,
        cost,
      }).catch((error: Error) => request.log.warn({ err: error }, 'usage event not sent'));
    });
    return reply;
  };

  const schema = { body: chatBodySchema };
  app.post('/v1/chat/completions', { schema }, (request, reply) => handle(request, reply, undefined));
  app.post<{ Params: { id: string } }>(
    '/devshard/:id/v1/chat/completions',
    { schema: { ...schema, params: escrowParamsSchema } },
    (request, reply) => handle(request, reply, BigInt(request.params.id)),
  );
}
