// The signed dispute routes (devshard-protocol.md §4.2, §4.3, §7.4), callable by the escrow creator
// or a group member (a slot's cold address or its warm key):
//   POST verify-timeout    {inference_id, reason, payload?, diffs?} → {accept, signature?, voter_slot, mempool?, reject_cause?}
//   POST challenge-receipt {inference_id, payload?, diffs?}         → {receipt?, confirmed_at?, mempool?}
//   POST verify-error-miss {inference_id, diffs?, finish_tx, response_payload} → as verify-timeout
// Only the creator binds an unbound session here; a group member reaching an unbound session gets
// 404 (verify-timeout) or an empty answer (challenge-receipt: this host never saw the inference).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { EscrowRow } from '../chain/stores.js';
import { answerChallenge, type ChallengeDeps, challengeExecutor } from './challenge.js';
import {
  authenticate,
  isGroupMember,
  type RouteEnv,
  rawBody,
  resolveEscrow,
  type SessionParams,
  sendError,
  sendJson,
} from './route-context.js';
import type { HostSession } from './session.js';
import { decodeVerifyErrorMissBody, verifyErrorMiss } from './verify-error-miss.js';
import { verifyTimeout } from './verify-timeout.js';
import {
  decodeChallengeBody,
  decodeVerifyTimeoutBody,
  encodeChallengeAnswer,
  encodeVerifyTimeoutAnswer,
} from './wire.js';

type Req = FastifyRequest<{ Params: SessionParams }>;

interface Caller {
  readonly row: EscrowRow;
  readonly text: string;
  /** The bound session; undefined when unbound and the caller may not bind it. */
  readonly session: HostSession | undefined;
}

/** Escrow, signature, sender rule, session (found, or bound when the creator calls). Null = answered. */
function caller(
  env: RouteEnv,
  request: Req,
  reply: FastifyReply,
  blockedWhenDisabled: boolean,
): Caller | null {
  const row = resolveEscrow(env, request, reply);
  if (!row) return null;
  const version = request.params.version;
  const found = env.store.find(row.id, version);
  if (found && 'status' in found) {
    sendError(reply, found.status, found.message);
    return null;
  }
  const body = rawBody(request);
  const signer = authenticate(env, request, reply, body);
  if (signer === null) return null;
  const isCreator = signer === row.creator;
  if (!isCreator && !isGroupMember(env, row, signer)) {
    sendError(reply, 403, 'restricted to escrow owner or group member');
    return null;
  }
  const params = env.core.chain.effectiveParams().devshardEscrow;
  // As on the reference host, only voting stops while requests are disabled; an executor still
  // answers challenges (a 503 there would read as "unreachable" and vote a timeout).
  if (blockedWhenDisabled && !params.devshardRequestsEnabled) {
    sendError(reply, 503, 'requests disabled', 'requests_disabled');
    return null;
  }
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  if (found) return { row, text, session: found.session };
  if (!isCreator) return { row, text, session: undefined };
  const bound = env.store.bind(row, version, params);
  if ('status' in bound) {
    sendError(reply, bound.status, bound.message, bound.devshardError);
    return null;
  }
  return { row, text, session: bound.session };
}

export function registerVerifyRoutes(app: FastifyInstance, env: RouteEnv): void {
  const { core, host, store } = env;
  const prefix = '/devshard/:version/sessions/:id';
  const maxNonce = () => BigInt(core.chain.effectiveParams().devshardEscrow.maxNonce);
  const challengeDeps = (): ChallengeDeps => ({
    store,
    model: core.model,
    nowSeconds: () => core.devshardHosts.clock.nowSeconds(),
    maxNonce: maxNonce(),
    refuseFault: () => core.faults.takeHostFault(host.address, ['refuse']) !== null,
  });

  app.post<{ Params: SessionParams }>(`${prefix}/challenge-receipt`, async (request, reply) => {
    const c = caller(env, request, reply, false);
    if (!c) return reply;
    let body: ReturnType<typeof decodeChallengeBody>;
    try {
      body = decodeChallengeBody(c.text);
    } catch (error) {
      return sendError(reply, 400, `decode request: ${(error as Error).message}`);
    }
    if (!c.session) return sendJson(reply, encodeChallengeAnswer({ mempool: [] }));
    const answer = answerChallenge(c.session, body, challengeDeps());
    if ('error' in answer) return sendError(reply, 500, answer.error.message);
    return sendJson(reply, encodeChallengeAnswer(answer));
  });

  app.post<{ Params: SessionParams }>(`${prefix}/verify-timeout`, async (request, reply) => {
    const c = caller(env, request, reply, true);
    if (!c) return reply;
    let body: ReturnType<typeof decodeVerifyTimeoutBody>;
    try {
      body = decodeVerifyTimeoutBody(c.text);
    } catch (error) {
      return sendError(reply, 400, `decode request: ${(error as Error).message}`);
    }
    const session = c.session;
    if (!session) return sendError(reply, 404, 'session not found');
    const slots = session.state.group.slots;
    const executor = slots[Number(body.inferenceId % BigInt(slots.length))]!;
    const executorHost = core.hosts.find((h) => h.address === executor);
    const answer = await verifyTimeout(session, body, {
      store,
      nowSeconds: () => core.devshardHosts.clock.nowSeconds(),
      maxNonce: maxNonce(),
      challenge: async (challenge) =>
        executorHost
          ? challengeExecutor(
              store,
              executorHost,
              session,
              challenge,
              (b) => answerChallenge(session, b, challengeDeps()),
              core.devshardHosts.clock.nowSeconds(),
            )
          : { reachable: false },
    });
    if ('error' in answer) return sendError(reply, 500, answer.error.message);
    return sendJson(reply, encodeVerifyTimeoutAnswer(answer));
  });

  app.post<{ Params: SessionParams }>(`${prefix}/verify-error-miss`, async (request, reply) => {
    const c = caller(env, request, reply, true);
    if (!c) return reply;
    let body: ReturnType<typeof decodeVerifyErrorMissBody>;
    try {
      body = decodeVerifyErrorMissBody(c.text);
    } catch (error) {
      return sendError(reply, 400, `decode request: ${(error as Error).message}`);
    }
    if (!c.session) return sendError(reply, 404, 'session not found');
    const answer = verifyErrorMiss(c.session, body, { store, maxNonce: maxNonce() });
    if ('error' in answer) return sendError(reply, 500, answer.error.message);
    return sendJson(reply, encodeVerifyTimeoutAnswer(answer));
  });
}
