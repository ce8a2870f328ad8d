// A diff without an inference (devshard-protocol.md §7.2 step 6: "queued txs ride in the next diff
// (request, timeout or finalize round); an idle session settles nothing until a diff is sent"):
// pending txs plus optional extra txs, persisted, then delivered to host nonce mod N. A host that is
// down is skipped: the diff exists and reaches it by catch-up later (§8.1).
import { SessionPhase } from '../hash/root-formula.js';
import type { EncodedTx, TxKind } from '../proto/devshard-tx.js';
import { deliverDiff } from './delivery.js';
import type { SessionContext } from './session-context.js';
import { composeAndPersist, reserveStart, settleComposed } from './write-ahead.js';

export interface FlushResult {
  readonly nonce: bigint;
  /** Cold address of slot nonce mod N. */
  readonly target: string;
  readonly txs: readonly TxKind[];
  /** The target host answered (it may still be caught up later when it did not). */
  readonly delivered: boolean;
  readonly error?: Error;
}

export interface FlushOptions {
  /** Send a diff even when it carries no tx (finalize rounds, §8.1). */
  readonly force?: boolean;
}

export async function flushDiff(
  ctx: SessionContext,
  extra: readonly EncodedTx[],
  options: FlushOptions = {},
): Promise<FlushResult | undefined> {
  const committed = await ctx.composeLock.run(async () => {
    // The phase and nonce below are the replica's: every inference diff in flight lands first.
    await settleComposed(ctx);
    await ctx.guard.assertUsable();
    const nonce = ctx.replica.state.latestNonce + 1n;
    // Outside finalize, never spend the N + 1 nonces finalize needs (§7.5, §8.1).
    if (!options.force && ctx.replica.state.phase === SessionPhase.Active && nonce > reserveStart(ctx))
      return undefined;
    if (!options.force && extra.length === 0 && ctx.pending.size === 0) return undefined;
    return composeAndPersist(ctx, extra, { requireTxs: !options.force });
  });
  if (!committed) return undefined;
  const nonce = committed.stored.nonce;
  const delivery = await deliverDiff(ctx, committed.target, nonce);
  return {
    nonce,
    target: committed.target,
    txs: committed.stored.diff.txs.map((t) => t.tx.kind).filter((k): k is TxKind => k !== 'none'),
    delivered: delivery.ok,
    ...(delivery.error ? { error: delivery.error } : {}),
  };
}
