// Pool rebuild (architecture §4: Redis state is "rebuilt from Postgres when lost"):
// one call writes the pool entry of every registered escrow that is not settled, from its Postgres
// row, and removes the entries of settled ones. The leading controller runs it when it takes the
// leader lease — at start, and again when Redis came back empty, which took the lease with it.
//
// An entry an owner wrote is never overwritten (it has live numbers and the owner's id); it only
// loses `active` (or `held`, a routing status waiting on reservations) when Postgres says the
// escrow is out of routing. A missing entry is written
// unowned (`owner` empty: nothing is forwarded to it) with the deposit as its balance estimate and
// the last durable nonce, until the replica that claims the escrow publishes the whole entry.
import type { PoolStatus } from '@gonka-gateway/shared';
import { encodePoolState, escrowTable } from '@gonka-gateway/shared';
import type { ControllerContext } from '../controller-context.js';
import { removeFromPool } from '../escrow/pool-status.js';

/** KEYS: pool hash, model set, models set. ARGV: escrow id, model, channel, routable (1/0), status, fields… */
const REBUILD_ENTRY = `if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV, 6))
elseif ARGV[4] == '0' then
  local status = redis.call('HGET', KEYS[1], 'status')
  if status == 'active' or status == 'held' then redis.call('HSET', KEYS[1], 'status', ARGV[5]) end
end
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[1])
return 1`;

export interface PoolRebuildSummary {
  written: number;
  removed: number;
}

/** Where an escrow stands for routing, from its Postgres row (architecture §3). */
export function poolStatusOf(state: string, active: boolean): PoolStatus {
  if (state !== 'active') return 'draining';
  return active ? 'active' : 'inactive';
}

export async function rebuildPool(ctx: ControllerContext): Promise<PoolRebuildSummary> {
  const rows = await escrowTable.listWithSessionNonce(ctx.sql);
  const summary: PoolRebuildSummary = { written: 0, removed: 0 };
  for (const r of rows) {
    const escrowId = r.escrowId;
    if (r.state === 'settled') {
      await removeFromPool(ctx, escrowId, r.modelId);
      summary.removed++;
      continue;
    }
    const status = poolStatusOf(r.state, r.active);
    const fields = encodePoolState({
      escrowId,
      modelId: r.modelId,
      status,
      capacityWeight: 0,
      balanceEstimate: r.amount,
      nonce: r.lastNonce ?? 0n,
      owner: null,
      updatedAtMs: Date.now(),
      ...(r.lastError && !r.active ? { cause: r.lastError.slice(0, 200) } : {}),
    });
    await ctx.redis.eval(
      REBUILD_ENTRY,
      3,
      ctx.keys.poolEscrow(escrowId),
      ctx.keys.poolModel(r.modelId),
      ctx.keys.poolModels,
      escrowId.toString(),
      r.modelId,
      ctx.keys.poolChanges,
      status === 'active' ? '1' : '0',
      status,
      ...Object.entries(fields).flat(),
    );
    summary.written++;
  }
  ctx.logger.info({ ...summary, marker: 'pool_rebuilt' }, 'pool state rebuilt from Postgres');
  return summary;
}
