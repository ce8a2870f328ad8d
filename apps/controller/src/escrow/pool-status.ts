// The controller's writes to the Redis pool state (architecture §3: every escrow change is written
// to Postgres first, then published). An existing entry gets the new routing status at once, so
// proxies stop routing before the owner's next claim pass drains the escrow; an entry that does not
// exist is not created (its owner writes the whole entry when it claims). Every change is announced
// on the pool channel.
import type { PoolStatus } from '@gonka-gateway/shared';
import type { ControllerContext } from '../controller-context.js';

const SET_IF_PRESENT = `if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'status', ARGV[1], 'updated_at_ms', ARGV[2])
end
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1`;

export async function publishPoolStatus(
  ctx: ControllerContext,
  escrowId: bigint,
  status: PoolStatus,
): Promise<void> {
  await ctx.redis.eval(
    SET_IF_PRESENT,
    1,
    ctx.keys.poolEscrow(escrowId),
    status,
    String(Date.now()),
    ctx.keys.poolChanges,
    escrowId.toString(),
  );
}

const REPLACE_STATUS = `if redis.call('HGET', KEYS[1], 'status') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'updated_at_ms', ARGV[3])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1`;

/** Sets `status` only while the entry's status is `from` (a hold or its release); true if it did. */
export async function replacePoolStatus(
  ctx: ControllerContext,
  escrowId: bigint,
  from: PoolStatus,
  status: PoolStatus,
): Promise<boolean> {
  const done = await ctx.redis.eval(
    REPLACE_STATUS,
    1,
    ctx.keys.poolEscrow(escrowId),
    from,
    status,
    String(Date.now()),
    ctx.keys.poolChanges,
    escrowId.toString(),
  );
  return Number(done) === 1;
}

const ACTIVE_IF_OWNED = `if redis.call('EXISTS', KEYS[1]) == 1 and redis.call('HGET', KEYS[1], 'owner') ~= '' then
  redis.call('HSET', KEYS[1], 'status', 'active', 'updated_at_ms', ARGV[1])
end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1`;

/**
 * Activate: an entry whose owner still serves the escrow (deactivated and re-activated before the
 * owner's next claim pass drained it) gets `active` back; an unowned one is written whole by the
 * replica that claims it.
 */
export async function publishActivated(ctx: ControllerContext, escrowId: bigint): Promise<void> {
  await ctx.redis.eval(
    ACTIVE_IF_OWNED,
    1,
    ctx.keys.poolEscrow(escrowId),
    String(Date.now()),
    ctx.keys.poolChanges,
    escrowId.toString(),
  );
}

/** DELETE of the local record: the entry leaves the pool (and its model's set). */
export async function removeFromPool(
  ctx: ControllerContext,
  escrowId: bigint,
  modelId: string,
): Promise<void> {
  await ctx.redis
    .multi()
    .del(ctx.keys.poolEscrow(escrowId))
    .srem(ctx.keys.poolModel(modelId), escrowId.toString())
    .publish(ctx.keys.poolChanges, escrowId.toString())
    .exec();
}

/** Requests in flight on an escrow across replicas (the proxies count them in Redis). */
export async function inFlightCount(ctx: ControllerContext, escrowId: bigint): Promise<number> {
  const raw = await ctx.redis.get(ctx.keys.escrowInFlight(escrowId));
  const n = raw === null ? 0 : Number(raw);
  return Number.isFinite(n) && n > 0 ? n : 0;
}
