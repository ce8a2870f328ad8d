// One usage record per chat request (docs/keys-and-usage.md, "The usage ledger"), appended to the
// Redis usage stream off the response path; a consumer group writes them to Postgres in batches,
// idempotent by request id (apps/proxy/src/usage/). The cost is the served nonce's, read from the
// session at answer time.
import type { InferenceCost } from '@gonka-gateway/devshard/session';
import type { RedisKeys } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';

/** Which deadline of an attempt passed before it answered. */
export type AttemptDeadline = 'receipt' | 'first_token' | 'stall' | 'hard';

/**
 * One attempt of a chat request (one escrow nonce sent to one participant), kept with the request's
 * usage record (usage_records.attempts) so GET /v1/requests/{request_id} can show what happened.
 * Times are ms since the request started.
 */
export interface AttemptRecord {
  readonly escrow_id: string;
  readonly nonce: string;
  readonly participant: string;
  /** Started by a deadline or failure of an earlier attempt. */
  readonly hedge: boolean;
  readonly started_ms: number;
  readonly receipt_ms?: number;
  readonly first_token_ms?: number;
  readonly ended_ms?: number;
  readonly deadlines_hit: readonly AttemptDeadline[];
  readonly outcome: 'served' | 'failed' | 'cancelled' | 'deterministic_error';
  /** Short code, e.g. 'receipt_timeout', 'http_503'. */
  readonly error?: string;
  readonly output_tokens?: number;
  /** ngonka, at answer time. */
  readonly cost?: string;
  readonly cost_final?: boolean;
  /** Nonces spent fee-only to skip quarantined or already-tried participants. */
  readonly burned_nonces?: readonly string[];
}

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
  /** Every attempt, in the order they started; sent as one JSON field `attempts`. */
  readonly attempts?: readonly AttemptRecord[];
}

/** Bounded stream: the consumer keeps up long before this many records wait. */
const STREAM_MAXLEN = 1_000_000;

export function sendUsage(redis: Redis, keys: RedisKeys, r: UsageRecord): Promise<unknown> {
  const attempts = r.attempts === undefined ? [] : ['attempts', JSON.stringify(r.attempts)];
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
    ...attempts,
  );
}
