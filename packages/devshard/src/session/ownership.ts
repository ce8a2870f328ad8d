// Whether this session may still write its escrow (architecture §2.1, §2.3), and how it stops when it
// may not. Every fenced store write goes through fencedWrite: the owner's write guard (its lease) runs
// first, and a `stale_token` from the store means a newer owner holds the escrow. Both fault the
// session with `ownership_lost`, never `divergence`: a fenced owner seeing a host ahead of it, or a
// nonce already taken, is what a takeover looks like from the old side, and must not pause a healthy
// escrow. Such answers are therefore checked against the store before they are called a divergence.

import { SessionError, SessionErrorCode } from './errors.js';
import type { SessionContext } from './session-context.js';
import { isSessionStoreError, SessionStoreErrorCode } from './store.js';

/** Stops the session for good (first cause wins) and reports it once with a `faulted` event. */
export function faultSession(ctx: SessionContext, error: SessionError): SessionError {
  if (ctx.fault) return ctx.fault;
  ctx.fault = error;
  ctx.emit({ type: 'faulted', error });
  return error;
}

export function ownershipLost(ctx: SessionContext, detail: string, cause?: unknown): SessionError {
  return faultSession(ctx, new SessionError(SessionErrorCode.OwnershipLost, detail, cause));
}

export const isStaleToken = (error: unknown): boolean =>
  isSessionStoreError(error) && error.code === SessionStoreErrorCode.StaleToken;

/**
 * A write that needs the current fencing token. The write guard runs right before it; a guard that
 * throws, or a store that answers `stale_token`, faults the session with `ownership_lost` (thrown as
 * a SessionError). Other store errors pass through unchanged.
 */
export async function fencedWrite<T>(
  ctx: SessionContext,
  operation: string,
  write: (token: bigint) => Promise<T>,
): Promise<T> {
  try {
    ctx.writeGuard?.();
  } catch (error) {
    throw ownershipLost(ctx, `${operation}: write guard refused (${(error as Error).message})`, error);
  }
  try {
    return await write(ctx.fencingToken);
  } catch (error) {
    if (isStaleToken(error)) throw ownershipLost(ctx, `${operation}: ${(error as Error).message}`, error);
    throw error;
  }
}

/**
 * Whether this session still holds the escrow: the guard passes and the store's current token is
 * ours. A store that cannot be read leaves the question open (undefined).
 */
export async function stillOwner(ctx: SessionContext): Promise<boolean | undefined> {
  try {
    ctx.writeGuard?.();
  } catch {
    return false;
  }
  try {
    const stored = await ctx.store.load(ctx.escrowId);
    return stored !== undefined && stored.fencingToken === ctx.fencingToken;
  } catch {
    return undefined;
  }
}

/**
 * A suspicious answer (e.g. a host root we cannot match): composition stops at once, the store says
 * whether we are still the owner, and the session faults with `ownership_lost` or with `suspected`
 * (then `confirmed` runs, e.g. to report the divergence). An unreadable store keeps `suspected`: the
 * evidence we have.
 */
export function faultAfterCheck(ctx: SessionContext, suspected: SessionError, confirmed?: () => void): void {
  if (ctx.fault || ctx.faultCheck) return;
  const check = (async () => {
    const owner = await stillOwner(ctx);
    if (owner === false) {
      ownershipLost(ctx, `not the writer any more (${suspected.message})`);
      return;
    }
    if (!ctx.fault) confirmed?.();
    faultSession(ctx, suspected);
  })().finally(() => {
    ctx.faultCheck = undefined;
  });
  ctx.faultCheck = check;
  ctx.background.add(check);
  void check.finally(() => ctx.background.delete(check));
}

/** Throws the session's fault, after any ownership check in progress has settled. */
export async function assertUsableAsync(ctx: SessionContext): Promise<void> {
  while (ctx.faultCheck) await ctx.faultCheck;
  if (ctx.fault) throw ctx.fault;
}
