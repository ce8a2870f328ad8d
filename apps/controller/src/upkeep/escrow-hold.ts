// Holds in the balance check (spec §3.1 "periodic balance check"; depletion-check.ts): an escrow
// whose usable balance is below the serving minimum while the reservations of its in-flight
// inferences (`reserved`, published by its owner) would bring it back above it when they resolve —
// each returns reserved − actual cost to the balance (devshard-protocol.md §5.4) — is `held`, not
// `depleted`: out of routing, not replaced, not settled. A big request in flight is not an empty
// escrow, and retiring it would settle a healthy deposit. Once the reservations have resolved the
// check releases it (back to `active`, the balance is above the minimum) or retires it as depleted
// (replacement and settle, as for any depleted escrow). Only an `active` entry is held and only a
// `held` one released (compare-and-set), so a hold never undoes a retirement or a drain.
import { DEPLETION_THRESHOLD, type PoolEscrowState, type PoolStatus } from '@gonka-gateway/shared';
import type { ControllerContext } from '../controller-context.js';
import { replacePoolStatus } from '../escrow/pool-status.js';

export interface HoldFinding {
  escrowId: bigint;
  status: 'held' | 'released';
}

/** Whether the entry is below the minimum only while its in-flight reservations are out. */
export function mayComeBack(pool: PoolEscrowState): boolean {
  return (
    pool.balanceEstimate < DEPLETION_THRESHOLD &&
    pool.balanceEstimate + (pool.reserved ?? 0n) >= DEPLETION_THRESHOLD
  );
}

/**
 * Holds or releases the escrow given the check's verdict on its entry (`depleted`, `nonce_limited`
 * or none); undefined when the verdict stands as it is.
 */
export async function holdOrRelease(
  ctx: ControllerContext,
  pool: PoolEscrowState,
  verdict: PoolStatus | null,
): Promise<HoldFinding | undefined> {
  const escrowId = pool.escrowId;
  const numbers = {
    escrowId: escrowId.toString(),
    balance: pool.balanceEstimate.toString(),
    reserved: (pool.reserved ?? 0n).toString(),
  };
  if (verdict === 'depleted' && mayComeBack(pool)) {
    if (pool.status === 'held') return { escrowId, status: 'held' };
    if (pool.status !== 'active') return undefined;
    if (await replacePoolStatus(ctx, escrowId, 'active', 'held')) {
      ctx.logger.info(
        { marker: 'escrow_held', ...numbers },
        'escrow held: below the serving minimum until its in-flight reservations resolve',
      );
    }
    return { escrowId, status: 'held' };
  }
  if (verdict === null && pool.status === 'held') {
    if (await replacePoolStatus(ctx, escrowId, 'held', 'active')) {
      ctx.logger.info({ marker: 'escrow_hold_released', ...numbers }, 'escrow released from its hold');
    }
    return { escrowId, status: 'released' };
  }
  return undefined;
}
