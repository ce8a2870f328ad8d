// What an owner writes into the Redis pool state (architecture §4; pool-state.ts codec): that it owns
// an escrow, its nonce, balance and in-flight reservations as they move, draining, faulted with the cause, and that it let
// go. Every write is conditional in one Lua script, so a replica that lost an escrow never
// overwrites what the new owner published: owned/progress/faulted need our lease value, released
// needs our replica id in `owner`.
import { encodePoolState, type PoolEscrowState, type RedisKeys } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';

/** KEYS: lease, pool hash, model set, models set. ARGV: lease value, escrow id, model, channel, fields… */
const WHILE_LEASED = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[2], unpack(ARGV, 5))
redis.call('SADD', KEYS[3], ARGV[2])
redis.call('SADD', KEYS[4], ARGV[3])
redis.call('PUBLISH', ARGV[4], ARGV[2])
return 1`;

/**
 * KEYS: lease, pool hash. ARGV: escrow id, channel, status, cause, time. Only an existing entry nobody
 * leases, and only when it says something else (no announcement for a repeat).
 */
const WHILE_UNLEASED = `if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
local now = redis.call('HMGET', KEYS[2], 'status', 'cause', 'owner')
if now[1] == ARGV[3] and now[2] == ARGV[4] and (now[3] == false or now[3] == '') then return 1 end
redis.call('HSET', KEYS[2], 'status', ARGV[3], 'cause', ARGV[4], 'owner', '', 'updated_at_ms', ARGV[5])
redis.call('PUBLISH', ARGV[2], ARGV[1])
return 1`;

/** KEYS: pool hash. ARGV: replica id, escrow id, channel, fields… */
const WHILE_OWNER = `if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
redis.call('PUBLISH', ARGV[3], ARGV[2])
return 1`;

export type PublishedState = Omit<PoolEscrowState, 'updatedAtMs'>;

export class PoolPublisher {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
  ) {}

  /** The whole entry (on claim), while `leaseValue` is still the lease. */
  async owned(state: PublishedState, leaseValue: string): Promise<boolean> {
    const fields = encodePoolState({ ...state, updatedAtMs: Date.now() });
    return this.#whileLeased(state.escrowId, state.modelId, leaseValue, fields);
  }

  /**
   * Some fields (nonce, balance, reserved, nonce ceiling and routing stop, status, cause), while
   * `leaseValue` is still the lease.
   */
  async update(
    escrowId: bigint,
    modelId: string,
    leaseValue: string,
    fields: Partial<
      Pick<
        PoolEscrowState,
        'status' | 'nonce' | 'balanceEstimate' | 'reserved' | 'cause' | 'nonceCeiling' | 'routingStop'
      >
    >,
  ): Promise<boolean> {
    const out: Record<string, string> = { updated_at_ms: String(Date.now()) };
    if (fields.status !== undefined) out.status = fields.status;
    if (fields.nonce !== undefined) out.nonce = fields.nonce.toString();
    if (fields.balanceEstimate !== undefined) out.balance_estimate = fields.balanceEstimate.toString();
    if (fields.reserved !== undefined) out.reserved = fields.reserved.toString();
    if (fields.cause !== undefined) out.cause = fields.cause;
    if (fields.nonceCeiling !== undefined) out.nonce_ceiling = fields.nonceCeiling.toString();
    if (fields.routingStop !== undefined) out.routing_stop = fields.routingStop.toString();
    return this.#whileLeased(escrowId, modelId, leaseValue, out);
  }

  /**
   * Why nobody serves an escrow this replica declined to claim (status and cause), on its existing
   * entry and only while no replica leases it; a repeat changes and announces nothing. The claim that
   * later serves it writes the whole entry.
   */
  async declined(escrowId: bigint, fields: Pick<PoolEscrowState, 'status' | 'cause'>): Promise<boolean> {
    const ok = await this.redis.eval(
      WHILE_UNLEASED,
      2,
      this.keys.escrowLease(escrowId),
      this.keys.poolEscrow(escrowId),
      escrowId.toString(),
      this.keys.poolChanges,
      fields.status,
      fields.cause ?? '',
      String(Date.now()),
    );
    return Number(ok) === 1;
  }

  /** owner = '' once we let go (status kept: a faulted escrow stays faulted), if we were the owner. */
  async released(escrowId: bigint, replicaId: string): Promise<boolean> {
    const args = ['owner', '', 'updated_at_ms', String(Date.now())];
    const ok = await this.redis.eval(
      WHILE_OWNER,
      1,
      this.keys.poolEscrow(escrowId),
      replicaId,
      escrowId.toString(),
      this.keys.poolChanges,
      ...args,
    );
    return Number(ok) === 1;
  }

  async #whileLeased(
    escrowId: bigint,
    modelId: string,
    leaseValue: string,
    fields: Record<string, string>,
  ): Promise<boolean> {
    const ok = await this.redis.eval(
      WHILE_LEASED,
      4,
      this.keys.escrowLease(escrowId),
      this.keys.poolEscrow(escrowId),
      this.keys.poolModel(modelId),
      this.keys.poolModels,
      leaseValue,
      escrowId.toString(),
      modelId,
      this.keys.poolChanges,
      ...Object.entries(fields).flat(),
    );
    return Number(ok) === 1;
  }
}
