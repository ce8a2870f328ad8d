// The unsigned GET routes (devshard-protocol.md §4.2, §4.3), on a bound session only (404 otherwise):
//   GET signatures?nonce=N → {"signatures": {"<slot>": b64}} — this host's slots, when it reached N
//   GET diffs?from=&to=    → [{nonce, txs, user_sig, post_state_root?, state_hash}] (≤ 1000 diffs)
//   GET mempool            → {"txs": [b64 DevshardTx]}
import { encodeSignaturesResponse } from '@gonka-gateway/devshard/host';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseCanonicalUint } from '../encoding.js';
import { type RouteEnv, resolveEscrow, type SessionParams, sendError, sendJson } from './route-context.js';
import type { HostSession } from './session.js';
import { encodeDiffRecords, encodeMempool } from './wire.js';

/** The reference host's page limit for GET diffs. */
export const MAX_DIFFS_PER_PAGE = 1000n;

type Query = Record<string, string | undefined>;
type Req = FastifyRequest<{ Params: SessionParams; Querystring: Query }>;

function boundSession(env: RouteEnv, request: Req, reply: FastifyReply): HostSession | null {
  const row = resolveEscrow(env, request, reply);
  if (!row) return null;
  const found = env.store.find(row.id, request.params.version);
  if (!found) {
    sendError(reply, 404, 'session not found');
    return null;
  }
  if ('status' in found) {
    sendError(reply, found.status, found.message);
    return null;
  }
  return found.session;
}

function uintParam(query: Query, name: string): bigint | null {
  const v = query[name];
  return v === undefined ? null : parseCanonicalUint(v);
}

export function registerQueryRoutes(app: FastifyInstance, env: RouteEnv): void {
  const prefix = '/devshard/:version/sessions/:id';

  app.get<{ Params: SessionParams; Querystring: Query }>(`${prefix}/signatures`, async (request, reply) => {
    const session = boundSession(env, request, reply);
    if (!session) return reply;
    const nonce = uintParam(request.query, 'nonce');
    if (nonce === null) return sendError(reply, 400, "missing or invalid 'nonce' parameter");
    const wrongRoot =
      session.rootAt(nonce) !== undefined &&
      env.core.faults.takeHostFault(env.host.address, ['wrong-state-sig']) !== null;
    const sig = session.stateSignature(nonce, env.store.signer, wrongRoot);
    const sigs = new Map<number, Uint8Array>();
    // One signature per slot the host owns: the chain counts one vote per slot entry (§8.2).
    if (sig) for (const slot of session.slots) sigs.set(slot, sig);
    return sendJson(reply, encodeSignaturesResponse(sigs));
  });

  app.get<{ Params: SessionParams; Querystring: Query }>(`${prefix}/diffs`, async (request, reply) => {
    const session = boundSession(env, request, reply);
    if (!session) return reply;
    const from = uintParam(request.query, 'from');
    const to = uintParam(request.query, 'to');
    if (from === null) return sendError(reply, 400, "invalid 'from' parameter");
    if (to === null) return sendError(reply, 400, "invalid 'to' parameter");
    if (to >= from && to - from + 1n > MAX_DIFFS_PER_PAGE) {
      return sendError(reply, 400, `at most ${MAX_DIFFS_PER_PAGE} diffs per request`);
    }
    const records = session.diffs(from, to).map((d) => ({ wire: d.wire, stateHash: d.root }));
    return sendJson(reply, encodeDiffRecords(records));
  });

  app.get<{ Params: SessionParams }>(`${prefix}/mempool`, async (request, reply) => {
    const session = boundSession(env, request as Req, reply);
    if (!session) return reply;
    return sendJson(reply, encodeMempool(session.mempool.txs().map((t) => t.bytes)));
  });
}
