// One usage record per chat request (issue 11 §7), appended to the Redis usage stream off the
// response path; a consumer group writes them to Postgres in batches, idempotent by request id
// (apps/proxy/src/usage/). The cost is the served nonce's, read from the session at answer time.
import type { InferenceCost } from '@gonka-gateway/devshard/session';
import type { OwnedSessions } from '@gonka-gateway/escrow-runtime';
import type { RedisKeys } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';

export interface UsageRecord {
  readonly requestId: string;
  readonly keyId: string;
  readonly model: string;
  readonly escrowId: string | undefined;
  readonly nonces: readonly bigint[];
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly status: number;
  readonly totalMs: number;
  readonly ttftMs: number | undefined;
  readonly replicaId: string;
  /** ngonka of the last nonce (the one that served); undefined when no nonce was spent here. */
  readonly cost?: InferenceCost | undefined;
}

/**
 * The served nonce's cost on this replica's session. Earlier attempts' nonces (a retry before the
 * first byte) may sit on other escrows and are not charged here; their records list them in `nonces`.
 */
export function servedCost(
  sessions: Pick<OwnedSessions, 'inferenceCost'>,
  escrowId: bigint | undefined,
  nonces: readonly bigint[],
): InferenceCost | undefined {
  const nonce = nonces.at(-1);
  return escrowId === undefined || nonce === undefined ? undefined : sessions.inferenceCost(escrowId, nonce);
}

/** Bounded stream: the consumer keeps up long before this many records wait. */
const STREAM_MAXLEN = 1_000_000;

export function sendUsage(redis: Redis, keys: RedisKeys, r: UsageRecord): Promise<unknown> {
  return redis.xadd(
    keys.usageStream,
    'MAXLEN',
    '~',
    STREAM_MAXLEN,
    '*',
    'request_id',
    r.requestId,
    'key_id',
    r.keyId,
    'model',
    r.model,
    'escrow_id',
    r.escrowId ?? '',
    'nonces',
    r.nonces.join(','),
    'input_tokens',
    String(r.inputTokens),
    'output_tokens',
    String(r.outputTokens),
    'status',
    String(r.status),
    'total_ms',
    r.totalMs.toFixed(3),
    'ttft_ms',
    r.ttftMs === undefined ? '' : r.ttftMs.toFixed(3),
    'cost',
    r.cost === undefined ? '' : r.cost.cost.toString(),
    'cost_final',
    r.cost?.final ? '1' : '0',
    'replica_id',
    r.replicaId,
    'at_ms',
    String(Date.now()),
  );
}
