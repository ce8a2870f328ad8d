// One usage record per chat request (issue 11 §7), appended to the Redis usage stream off the
// response path; a consumer group writes them to Postgres in batches, idempotent by request id.
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
    'replica_id',
    r.replicaId,
    'at_ms',
    String(Date.now()),
  );
}
