// The order to cut an escrow's in-flight requests (a forced settle, apps/controller README "Settle"):
// the controller writes the cause before it drains the escrow; the escrow's owner reads it while it
// drains (escrow-runtime owned-sessions.ts) and, instead of letting in-flight requests finish, cuts
// them at once with this cause, which their usage records and the owner's log carry. The TTL bounds
// an order whose settle never got to drain the escrow: it covers every retry of the settle job.
import type { Redis } from 'ioredis';
import type { RedisKeys } from './keys.js';

/** The cause a forced settle cuts with. */
export const SETTLE_FORCED_CUT = 'settle_forced';

/** Longer than the settle job's retries (8 attempts with exponential backoff from 2 s ≈ 9 min). */
export const ESCROW_CUT_TTL_MS = 15 * 60_000;

export async function orderEscrowCut(
  redis: Redis,
  keys: RedisKeys,
  escrowId: bigint,
  cause: string = SETTLE_FORCED_CUT,
): Promise<void> {
  await redis.set(keys.escrowCut(escrowId), cause, 'PX', ESCROW_CUT_TTL_MS);
}

/** The cause of a standing order for this escrow, or null. */
export function escrowCutOrder(redis: Redis, keys: RedisKeys, escrowId: bigint): Promise<string | null> {
  return redis.get(keys.escrowCut(escrowId));
}
