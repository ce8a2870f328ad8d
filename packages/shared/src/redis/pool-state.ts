// The pool state of one escrow as stored in a Redis hash: what the proxies need to route a chat
// request without touching Postgres. Values are strings in Redis; this codec is the only place that
// converts, and it rejects malformed entries instead of guessing.

/**
 * `faulted`: the owner's session stopped composing (divergence, every host rejected a fresh diff, a
 * corrupt store: a breaker tripped); out of routing until an operator acts, `cause` says why.
 */
export const POOL_STATUSES = [
  'active',
  'draining',
  'depleted',
  'nonce_limited',
  'inactive',
  'faulted',
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
  /** Last durable nonce of the session. */
  nonce: bigint;
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
    nonce: uint('nonce', hash.nonce),
    owner: hash.owner ? hash.owner : null,
    updatedAtMs: finiteNonNegative('updated_at_ms', hash.updated_at_ms),
    ...(hash.cause ? { cause: hash.cause } : {}),
  };
}
