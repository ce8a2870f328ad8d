// The pool state of one escrow as stored in a Redis hash: what the proxies need to route a chat
// request without touching Postgres. Values are strings in Redis; this codec is the only place that
// converts, and it rejects malformed entries instead of guessing.

/**
 * Spec §3.1, §8: an escrow whose usable balance is below this (ngonka) is depleted and gets no new
 * requests.
 */
export const DEPLETION_THRESHOLD = 1_000_000n;

/**
 * `faulted`: the owner's session stopped composing (divergence, every host rejected a fresh diff, a
 * corrupt store: a breaker tripped); out of routing until an operator acts, `cause` says why.
 * `held`: below DEPLETION_THRESHOLD while the reservations of its in-flight inferences (`reserved`)
 * may bring it back above when they resolve (devshard-protocol.md §5.4); out of routing, neither
 * replaced nor settled, until the balance check releases it (`active`) or retires it (`depleted`).
 * `unsupported_version`: not claimed because the chain does not approve the devshard protocol version
 * the escrow is bound to (`cause` names the approved and the supported versions); claimed again once
 * it does.
 */
export const POOL_STATUSES = [
  'active',
  'draining',
  'depleted',
  'held',
  'nonce_limited',
  'inactive',
  'faulted',
  'unsupported_version',
] as const;
export type PoolStatus = (typeof POOL_STATUSES)[number];

export interface PoolEscrowState {
  escrowId: bigint;
  modelId: string;
  status: PoolStatus;
  /** Relative capacity (sum of host weights); selection divides in-flight requests by it. */
  capacityWeight: number;
  /** Usable balance estimate in base denom. */
  balanceEstimate: bigint;
  /**
   * Reservations of the inferences still in flight (base denom): at most this returns to the balance
   * when they resolve. Absent from an entry no owner has published yet (read as 0).
   */
  reserved?: bigint;
  /** Last durable nonce of the session. */
  nonce: bigint;
  /**
   * The escrow's max_nonce as its owner's session knows it (nonce-routing.ts); absent while no chain
   * read told it.
   */
  nonceCeiling?: bigint;
  /** Where new chat stops for the nonce (nonceRoutingStop); absent from an entry no owner published. */
  routingStop?: bigint;
  /** Replica id of the current owner, or null when unowned. */
  owner: string | null;
  updatedAtMs: number;
  /** Why the escrow is out of routing (e.g. the session error of a `faulted` one); never a secret. */
  cause?: string;
}

export class PoolStateCodecError extends Error {
  override name = 'PoolStateCodecError';
}

export function encodePoolState(s: PoolEscrowState): Record<string, string> {
  return {
    escrow_id: s.escrowId.toString(),
    model_id: s.modelId,
    status: s.status,
    capacity_weight: String(s.capacityWeight),
    balance_estimate: s.balanceEstimate.toString(),
    nonce: s.nonce.toString(),
    owner: s.owner ?? '',
    updated_at_ms: String(s.updatedAtMs),
    cause: s.cause ?? '',
    ...(s.reserved !== undefined ? { reserved: s.reserved.toString() } : {}),
    // Always written ('' = unknown), so a whole entry never keeps an earlier owner's ceiling.
    nonce_ceiling: s.nonceCeiling?.toString() ?? '',
    routing_stop: s.routingStop?.toString() ?? '',
  };
}

function uint(field: string, value: string | undefined): bigint {
  if (value === undefined || !/^(0|[1-9]\d*)$/.test(value)) {
    throw new PoolStateCodecError(`pool state field ${field} must be a non-negative integer`);
  }
  return BigInt(value);
}

function finiteNonNegative(field: string, value: string | undefined): number {
  const n = Number(value);
  if (value === undefined || value === '' || !Number.isFinite(n) || n < 0) {
    throw new PoolStateCodecError(`pool state field ${field} must be a non-negative number`);
  }
  return n;
}

/** Decodes an HGETALL result; null for an empty hash (the key does not exist). */
export function decodePoolState(hash: Record<string, string>): PoolEscrowState | null {
  if (Object.keys(hash).length === 0) return null;
  const status = hash.status as PoolStatus;
  if (!POOL_STATUSES.includes(status)) throw new PoolStateCodecError('pool state field status is unknown');
  if (!hash.model_id) throw new PoolStateCodecError('pool state field model_id is missing');
  return {
    escrowId: uint('escrow_id', hash.escrow_id),
    modelId: hash.model_id,
    status,
    capacityWeight: finiteNonNegative('capacity_weight', hash.capacity_weight),
    balanceEstimate: uint('balance_estimate', hash.balance_estimate),
    ...(hash.reserved !== undefined ? { reserved: uint('reserved', hash.reserved) } : {}),
    nonce: uint('nonce', hash.nonce),
    ...(hash.nonce_ceiling ? { nonceCeiling: uint('nonce_ceiling', hash.nonce_ceiling) } : {}),
    ...(hash.routing_stop ? { routingStop: uint('routing_stop', hash.routing_stop) } : {}),
    owner: hash.owner ? hash.owner : null,
    updatedAtMs: finiteNonNegative('updated_at_ms', hash.updated_at_ms),
    ...(hash.cause ? { cause: hash.cause } : {}),
  };
}
