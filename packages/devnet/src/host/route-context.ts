// What every host route does before its own work (devshard-protocol.md §4.1): the version must be
// one of the chain's approved_versions (else the prefix does not exist: 404), the escrow id must be a
// canonical uint64 (400), the status faults answer first (429, 503 + X-Devshard-Error, 5xx), the
// escrow must exist on the devnet chain (404 `session not found`), and a signed POST must recover to
// an allowed sender (401 / 403). Errors are `{"message": …}`, as the reference's HTTP errors.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { EscrowRow } from '../chain/stores.js';
import type { DevnetCore, HostIdentity } from '../core.js';
import { parseCanonicalUint } from '../encoding.js';
import { STATUS_FAULT_MODES } from './faults.js';
import { authenticateRequest } from './request-auth.js';
import type { HostStore } from './session-store.js';

const U64_MAX = 0xffff_ffff_ffff_ffffn;

export interface SessionParams {
  version: string;
  id: string;
}

export interface RouteEnv {
  readonly core: DevnetCore;
  readonly host: HostIdentity;
  readonly store: HostStore;
}

export function sendError(
  reply: FastifyReply,
  status: number,
  message: string,
  devshardError?: string,
): FastifyReply {
  if (devshardError) reply.header('x-devshard-error', devshardError);
  return reply.code(status).type('application/json').send(JSON.stringify({ message }));
}

export function sendJson(reply: FastifyReply, text: string): FastifyReply {
  return reply.code(200).type('application/json').send(text);
}

/** The escrow row a route works on, or null after an error reply. */
export function resolveEscrow(
  env: RouteEnv,
  request: FastifyRequest<{ Params: SessionParams }>,
  reply: FastifyReply,
): EscrowRow | null {
  const { version, id } = request.params;
  const params = env.core.chain.effectiveParams().devshardEscrow;
  if (!params.approvedVersions.some((v) => v.name === version)) {
    sendError(reply, 404, `unknown version ${version}`);
    return null;
  }
  const escrowId = parseCanonicalUint(id);
  if (escrowId === null || escrowId > U64_MAX) {
    sendError(reply, 400, 'escrow id is not a canonical uint64');
    return null;
  }
  const fault = env.core.faults.takeHostFault(env.host.address, STATUS_FAULT_MODES);
  if (fault?.mode === 'rate-limit') {
    sendError(reply, 429, 'rate limit exceeded');
    return null;
  }
  if (fault?.mode === 'unavailable') {
    const code = fault.devshardError ?? 'requests_disabled';
    sendError(reply, 503, code.replaceAll('_', ' '), code);
    return null;
  }
  if (fault?.mode === 'error') {
    sendError(reply, fault.status ?? 500, 'injected host fault');
    return null;
  }
  const row = env.core.chain.committed.escrows.get(escrowId);
  if (!row) {
    sendError(reply, 404, 'session not found');
    return null;
  }
  return row;
}

/** The group member test of signed host↔host routes: a slot's cold address or its granted warm key. */
export function isGroupMember(env: RouteEnv, row: EscrowRow, signer: string): boolean {
  if (row.slots.includes(signer)) return true;
  return [...new Set(row.slots)].some((cold) => env.core.chain.hasWarmKeyGrant(cold, signer));
}

/** The recovered sender of a signed POST, or null after a 401. */
export function authenticate(
  env: RouteEnv,
  request: FastifyRequest<{ Params: SessionParams }>,
  reply: FastifyReply,
  body: Uint8Array,
): string | null {
  const auth = authenticateRequest(
    request.headers,
    request.params.id,
    body,
    env.core.devshardHosts.clock.nowSeconds(),
  );
  if ('status' in auth) {
    sendError(reply, auth.status, auth.message);
    return null;
  }
  return auth.signer;
}

/** The raw body bytes (the header signature covers them exactly). */
export function rawBody(request: FastifyRequest): Uint8Array {
  const body = request.body;
  return body instanceof Uint8Array ? body : new Uint8Array(0);
}
