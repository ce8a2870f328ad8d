// POST /v1/chat/completions (pooled) and POST /devshard/{id}/v1/chat/completions (one escrow) as a
// pipeline of named stages (architecture §5), each its own module:
//
//   parse     the exact body bytes kept (prompt_hash covers what the client sent, §2.5): size limit
//             (413), JSON only (415), UTF-8, nesting and duplicate keys (json-scan.ts)
//   authenticate  gate/auth.ts ran before the body is read; a missing or wrong key is refused here
//   policy    request-plan.ts: the request policy (request-policy.ts), access mode, stored key,
//             routable model, max_tokens, host bytes
//   admit     admit.ts: PoC gate, fleet-wide admission → a RequestAccount
//   serve     serve/attempt-race.ts: attempts on owned escrows with deadlines and hedges; or
//             forward-to-owner.ts when nothing local can start it
//   account   request-account.ts: release, budget settle, usage event, metrics — one finish()
import replyFrom from '@fastify/reply-from';
import type { OwnedSessions } from '@gonka-gateway/escrow-runtime';
import { GatewayError, type RedisKeys } from '@gonka-gateway/shared';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import type { KeyDirectory } from '../gate/key-directory.js';
import type { SettingsSource } from '../gate/settings.js';
import type { PoolSnapshot } from '../ownership/pool-snapshot.js';
import type { ProxyMetrics } from '../proxy-metrics.js';
import { type ServeDeps, serveChat } from '../serve/attempt-race.js';
import type { Admission } from './admission.js';
import { type AdmitDeps, admitChat } from './admit.js';
import { checkKey } from './chat-policy.js';
import { chatBodySchema, escrowParamsSchema } from './chat-schema.js';
import {
  type ForwardDeps,
  forwardToOwner,
  HOP_HEADER,
  isValidHop,
  UnreachableOwners,
} from './forward-to-owner.js';
import { scanJsonBody } from './json-scan.js';
import { type PlanDeps, planChat } from './request-plan.js';

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
  /** Deadlines, hedge budget, host health and the attempt cap of the serve stage. */
  readonly serving: Omit<ServeDeps, 'sessions' | 'metrics'>;
  /** Models the fleet serves according to Postgres (ownership/fleet-models.ts). */
  readonly fleetServes?: (model: string) => boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    rawBody: Buffer | undefined;
  }
}

export async function chatRoutes(app: FastifyInstance, o: ChatRoutesOptions): Promise<void> {
  await app.register(replyFrom, { undici: { connections: 128, pipelining: 1 } });
  registerParse(app, o.bodyLimit);
  registerAuthenticate(app);
  const stages = stageDeps(o);

  const handle = async (request: FastifyRequest, reply: FastifyReply, escrowId: bigint | undefined) => {
    const chat = planChat(stages.plan, request, escrowId);
    const hop = isValidHop(o.hopSecret, request.id, request.headers[HOP_HEADER]);
    const account = await admitChat(stages.admit, request, reply, chat, hop);
    if (!('finish' in account)) {
      return reply.status(account.error.status).headers(account.headers).send(account.error.toBody());
    }
    const outcome = await serveChat(
      request,
      reply,
      {
        model: chat.model,
        body: chat.hostBody,
        reservation: { inputTokens: BigInt(chat.inputTokens), maxTokens: BigInt(chat.maxTokens) },
        inputTokens: chat.inputTokens,
        stream: chat.stream,
        ask: chat.ask,
        ...(escrowId !== undefined ? { escrowId } : {}),
        capacityAware: o.capacityAware,
        headers: chat.headers,
      },
      stages.serve,
    ).catch((error: unknown) => {
      account.finish(undefined);
      throw error;
    });
    if (outcome.kind === 'not_here')
      return forwardToOwner(stages.forward, request, reply, chat, account, hop, outcome.unfunded);
    account.finish(outcome);
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

/** Parse: the exact bytes are kept, the host runs what the client sent (§2.5). */
function registerParse(app: FastifyInstance, bodyLimit: number): void {
  app.decorateRequest('rawBody', undefined);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit }, (request, body, done) => {
    const raw = body as Buffer;
    request.rawBody = raw;
    try {
      scanJsonBody(raw);
    } catch (error) {
      return done(error as Error, undefined);
    }
    try {
      done(null, JSON.parse(raw.toString('utf8')));
    } catch {
      done(new GatewayError('invalid_json', 'request body is not valid JSON'), undefined);
    }
  });
}

/** Authenticate: a missing or wrong key is refused before the body is read (spec §5.1). */
function registerAuthenticate(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    try {
      checkKey(request.caller);
    } catch (error) {
      return done(error as Error);
    }
    done();
  });
}

/** What each stage reads, drawn once from the route's options. */
function stageDeps(o: ChatRoutesOptions): {
  plan: PlanDeps;
  admit: AdmitDeps;
  serve: ServeDeps;
  forward: ForwardDeps;
} {
  const plan: PlanDeps = {
    settings: o.settings,
    tokenPrice: (model) => o.keyDirectory.tokenPrice(model),
    routable: (model) => o.pool.models().has(model) || o.sessions.list().some((e) => e.modelId === model),
    fleetServes: o.fleetServes ?? (() => false),
    escrowModel: (id) =>
      o.sessions.list().find((e) => e.escrowId === id)?.modelId ??
      o.pool.escrows.find((e) => e.escrowId === id)?.modelId,
    onKeyRejection: (reason) => o.metrics.keyRejections.inc({ reason }),
  };
  const admit: AdmitDeps = {
    admission: o.admission,
    metrics: o.metrics,
    redis: o.redis,
    keys: o.keys,
    replicaId: o.replicaId,
    sessions: o.sessions,
    pocBlocks: o.pocBlocks,
  };
  const serve: ServeDeps = { ...o.serving, sessions: o.sessions, metrics: o.metrics };
  const forward: ForwardDeps = {
    pool: o.pool,
    replicaId: o.replicaId,
    hopSecret: o.hopSecret,
    unreachable: new UnreachableOwners(),
    metrics: o.metrics,
    tokenPrice: (model) => o.keyDirectory.tokenPrice(model),
  };
  return { plan, admit, serve, forward };
}
