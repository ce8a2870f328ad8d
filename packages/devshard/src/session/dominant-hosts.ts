// Dominant hosts: a host whose slots reach N − vote_threshold cannot be outvoted. A timeout needs accept
// weight > vote_threshold from the *other* addresses (devshard-protocol.md §5.4 TimeoutInference),
// and they hold only N − slots ≤ vote_threshold; so such a host can refuse or stall every inference it
// executes and still be paid each reservation at the settlement drain (§5.6). With 16 slots and the
// default factor 50 (threshold 8) that is any host with 8 slots or more.
//
// Defence: after one refusal (no executor receipt) or one timeout by a dominant host, the session
// stops giving it StartInference: each nonce whose executor it is (slot nonce mod N, §1) is burned
// with a diff that carries only the queued txs — it costs fee_per_nonce, never a reservation. The
// owner's router reads `hostRisk()` and prefers escrows without a dominant host.
import type { SessionState } from '../state/types.js';
import { SessionError, SessionErrorCode } from './errors.js';
import { checkFunding } from './funding.js';
import { composeTip } from './pipeline.js';
import { type SessionContext, targetAddress } from './session-context.js';
import { composeNext } from './write-ahead.js';

/** Slot count at which an address can block every timeout vote on its inferences. */
export function dominantSlotCount(state: SessionState): number {
  return state.group.slots.length - state.config.voteThreshold;
}

export function isDominant(state: SessionState, address: string): boolean {
  return (state.group.slotCount.get(address) ?? 0) >= dominantSlotCount(state);
}

/** Addresses of the group that cannot be outvoted, in slot order of first appearance. */
export function dominantHosts(state: SessionState): string[] {
  return [...state.group.slotsOf.keys()].filter((a) => isDominant(state, a));
}

export interface HostRisk {
  /** Hosts that cannot be outvoted on a timeout (slots ≥ N − vote_threshold). */
  readonly dominant: readonly string[];
  /** Dominant hosts that refused or timed out once: their nonces are burned, never started. */
  readonly blocked: readonly string[];
  /** Nonces burned so far (fee only) to keep work away from blocked hosts. */
  readonly burnedNonces: number;
}

interface Blocking {
  readonly blocked: Set<string>;
  burned: number;
}

const blocking = new WeakMap<SessionContext, Blocking>();

function blockingOf(ctx: SessionContext): Blocking {
  let b = blocking.get(ctx);
  if (!b) {
    b = { blocked: new Set(), burned: 0 };
    blocking.set(ctx, b);
  }
  return b;
}

export function hostRisk(ctx: SessionContext): HostRisk {
  const b = blockingOf(ctx);
  return { dominant: dominantHosts(ctx.replica.state), blocked: [...b.blocked], burnedNonces: b.burned };
}

/**
 * A refusal (no executor receipt: refused, unreachable) or a timeout by `address`. Blocks it when it is
 * dominant; returns whether it is blocked now.
 */
export function noteNonService(ctx: SessionContext, address: string, inferenceId: bigint): boolean {
  if (!isDominant(ctx.replica.state, address)) return false;
  const b = blockingOf(ctx);
  if (!b.blocked.has(address)) {
    b.blocked.add(address);
    ctx.emit({ type: 'dominant_host_blocked', host: address, inferenceId });
  }
  return true;
}

/**
 * Burns every next nonce whose executor is a blocked host or in `options.avoid` (a diff without
 * StartInference: fee_per_nonce, no reservation), so the inference being composed lands on another
 * participant; returns the burned nonces. Caller holds ctx.composeLock. Refuses before burning
 * anything when no participant is left, and stops when the fees would eat the reservation
 * (`options.reserve`, §7.1 step 2). The burned diffs are persisted and reach the hosts by catch-up
 * with the next send.
 */
export async function burnBlockedNonces(
  ctx: SessionContext,
  workLimit: bigint,
  options: { avoid?: ReadonlySet<string> | undefined; reserve?: bigint } = {},
): Promise<bigint[]> {
  const b = blocking.get(ctx);
  const avoid = options.avoid;
  const skipped = (address: string) => (b?.blocked.has(address) ?? false) || (avoid?.has(address) ?? false);
  const burned: bigint[] = [];
  if ((!b || b.blocked.size === 0) && (!avoid || avoid.size === 0)) return burned;
  const addresses = [...ctx.replica.state.group.slotsOf.keys()];
  // Every address skipped: nothing can be served; stop rather than burn the escrow in fees.
  if (addresses.every(skipped)) {
    if (b && addresses.every((a) => b.blocked.has(a))) {
      throw new SessionError(SessionErrorCode.NotActive, 'every host of the group is blocked');
    }
    throw new SessionError(SessionErrorCode.NoEligibleHost, 'every participant of the group is avoided');
  }
  // On the tip (pipeline.ts): the burned diffs queue behind those in flight like any other; the
  // inference composed after them is durable only once they are, and voided with them.
  while (skipped(targetAddress(ctx, composeTip(ctx).latestNonce + 1n))) {
    const nonce = composeTip(ctx).latestNonce + 1n;
    if (nonce > workLimit)
      throw new SessionError(SessionErrorCode.NonceLimit, `nonce ${nonce} > ${workLimit}`);
    // This burned nonce's fee, then the inference's own diff: both before the reservation.
    if (options.reserve !== undefined) checkFunding(ctx, options.reserve, 2n);
    const address = targetAddress(ctx, nonce);
    await composeNext(ctx, [], { nonce });
    burned.push(nonce);
    if (b?.blocked.has(address)) b.burned++;
  }
  return burned;
}
