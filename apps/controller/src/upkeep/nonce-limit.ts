// The nonce side of the balance check (spec §3.1; devshard-protocol.md §7.5; depletion-check.ts):
// an escrow stops taking new chat at the routing stop its owner publishes with its nonce —
// max_nonce − (N + 1) − 200, max_nonce being the escrow's (shared nonce-routing.ts) — and is then
// `nonce_limited`: retired and replaced like a depleted one. While its owner has not learned the
// escrow's max_nonce (no chain read yet: no `nonce_ceiling` in the entry), the stop is 19,800 and the
// escrow is only held (`held`: out of routing, neither replaced nor settled), since the real ceiling
// is usually far above (mainnet: 1,000,000). Once the owner publishes it the nonce is below the new
// stop and the check releases the hold (escrow-hold.ts). Only an `active` entry is held
// (compare-and-set), so a hold never undoes a retirement or a drain.
import { type PoolEscrowState, UNKNOWN_CEILING_ROUTING_STOP } from '@gonka-gateway/shared';
import type { ControllerContext } from '../controller-context.js';
import { replacePoolStatus } from '../escrow/pool-status.js';
import type { HoldFinding } from './escrow-hold.js';

/** The entry's routing stop; an entry no owner published one in yet stops where an unknown ceiling does. */
export function routingStopOf(pool: PoolEscrowState): bigint {
  return pool.routingStop ?? UNKNOWN_CEILING_ROUTING_STOP;
}

/** At its routing stop while the escrow's max_nonce is not known: held, never retired for it. */
export function atUnknownCeiling(pool: PoolEscrowState): boolean {
  return pool.nonceCeiling === undefined && pool.nonce >= routingStopOf(pool);
}

/** Holds an escrow at the routing stop of an unknown ceiling (logged once, when it takes the hold). */
export async function holdAtUnknownCeiling(
  ctx: ControllerContext,
  pool: PoolEscrowState,
): Promise<HoldFinding | undefined> {
  if (pool.status === 'held') return { escrowId: pool.escrowId, status: 'held' };
  if (pool.status !== 'active') return undefined;
  if (await replacePoolStatus(ctx, pool.escrowId, 'active', 'held')) {
    ctx.logger.info(
      {
        marker: 'escrow_held',
        escrowId: pool.escrowId.toString(),
        nonce: pool.nonce.toString(),
        routingStop: routingStopOf(pool).toString(),
      },
      'escrow held: at the routing stop of an unknown max_nonce until its owner reads the chain',
    );
  }
  return { escrowId: pool.escrowId, status: 'held' };
}
