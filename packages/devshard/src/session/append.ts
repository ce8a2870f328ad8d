// The write-ahead append itself (architecture §2.3) and what happens when it does not simply succeed.
// A definite refusal (a SessionStoreError) wrote nothing: the request fails and the session goes on.
// A failure of unknown outcome (connection lost around COMMIT) is settled by repeating the identical
// append, a no-op if the first one landed, a few times; never by signing another diff for that nonce.
// If it stays unknown, the diff is kept as `unresolved` and appended again before anything else is
// composed, so the session recovers without a reopen. A nonce already taken means either a newer
// owner (ownership lost) or a view behind the store, which is caught up from the store's diffs.

import { txEnv, warmKeyLookupFromBindings } from '../state/apply-context.js';
import { applyDiff } from '../state/apply-diff.js';
import { InferenceStatus } from '../state/types.js';
import { isSessionError, SessionError, SessionErrorCode } from './errors.js';
import { checkHostTx } from './host-tx-check.js';
import type { Unresolved } from './replica.js';
import type { SessionContext } from './session-context.js';
import { isSessionStoreError, SessionStoreErrorCode } from './store.js';

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * Appends `write.diffs` (one diff, or consecutive ones in one statement: SessionStore.appendDiffs)
 * with bounded retries of the identical write. Resolves once the store holds them; otherwise throws
 * a SessionError (`write_failed`, or the session's fault) and, when the outcome is still unknown,
 * leaves the write in `ctx.replica.unresolved`.
 */
export async function writeAhead(ctx: SessionContext, write: Unresolved): Promise<void> {
  const first = write.diffs[0];
  const last = write.diffs.at(-1);
  if (!first || !last) throw new RangeError('a write-ahead of no diff');
  const { nonce } = first;
  const nonces = first === last ? `nonce ${nonce}` : `nonces ${nonce}…${last.nonce}`;
  let unknown: unknown;
  for (let attempt = 0; attempt < ctx.settings.appendAttempts; attempt++) {
    if (attempt > 0) await ctx.clock.sleep(ctx.settings.appendRetryMs * 2 ** (attempt - 1));
    try {
      await ctx.guard.fencedWrite(`appendDiff ${nonces}`, (token) =>
        write.diffs.length === 1 || !ctx.store.appendDiffs
          ? ctx.store.appendDiff(ctx.escrowId, first, token, write.writes)
          : ctx.store.appendDiffs(ctx.escrowId, write.diffs, token, write.writes),
      );
      ctx.replica.appendKnown();
      return;
    } catch (error) {
      if (isSessionError(error)) {
        ctx.replica.appendKnown();
        throw error; // ownership lost: the session has faulted
      }
      if (isSessionStoreError(error) && error.code === SessionStoreErrorCode.NonceConflict) {
        // An identical write would have been a no-op: another diff holds one of these nonces.
        ctx.replica.appendKnown();
        throw await nonceTaken(ctx, nonce, error);
      }
      if (isSessionStoreError(error) && unknown === undefined) {
        ctx.replica.appendKnown();
        throw new SessionError(
          SessionErrorCode.WriteFailed,
          `write-ahead of ${nonces} refused: ${error.message}`,
          error,
        );
      }
      unknown = error;
      ctx.emit({ type: 'store_error', operation: 'appendDiff', error: error as Error });
    }
  }
  ctx.replica.appendUnknown(write);
  throw new SessionError(
    SessionErrorCode.WriteFailed,
    `write-ahead of ${nonces}: outcome unknown after ${ctx.settings.appendAttempts} tries ` +
      `(${message(unknown)}); the same write is appended again before the next one`,
    unknown,
  );
}

/** Settles the diffs of an earlier unknown write-ahead before anything else is composed. */
export async function resolveUnresolved(ctx: SessionContext): Promise<void> {
  const write = ctx.replica.unresolved;
  if (!write) return;
  await ctx.writes.afterSaves(() => writeAhead(ctx, write));
  write.commit();
}

/**
 * The store holds another diff at `nonce`. A newer owner: ownership lost. Still the owner: our view
 * is behind the store, so the stored diffs after our latest are verified and adopted; this request
 * fails and the next one composes after the store's head.
 */
async function nonceTaken(ctx: SessionContext, nonce: bigint, cause: unknown): Promise<SessionError> {
  if ((await ctx.guard.stillOwner()) === false) {
    return ctx.guard.ownershipLost(`nonce ${nonce} was taken by another writer`, cause);
  }
  try {
    const adopted = await adoptStoredHead(ctx);
    return new SessionError(
      SessionErrorCode.WriteFailed,
      `nonce ${nonce} was already stored; ${adopted} stored diff(s) adopted, next nonce ${ctx.replica.state.latestNonce + 1n}`,
      cause,
    );
  } catch (error) {
    return ctx.guard.faultWith(
      new SessionError(
        SessionErrorCode.CorruptStore,
        `nonce ${nonce} is taken and the store's diffs after ${ctx.replica.state.latestNonce} do not apply: ${message(error)}`,
        error,
      ),
    );
  }
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((v, i) => v === b[i]);

/** Applies the store's diffs after our latest with the strict rules, checking each stored root. */
async function adoptStoredHead(ctx: SessionContext): Promise<number> {
  let adopted = 0;
  for (;;) {
    const from = ctx.replica.state.latestNonce + 1n;
    const diffs = await ctx.store.readDiffs(ctx.escrowId, from, from + ctx.settings.catchUpChunk - 1n);
    if (diffs.length === 0) break;
    for (const d of diffs) {
      const isWarmKey = warmKeyLookupFromBindings(d.warmKeysBound, ctx.applyCtx.isWarmKey);
      const next = applyDiff(ctx.replica.state, d.diff, { ...ctx.applyCtx, isWarmKey, replay: true }).state;
      if (!sameBytes(next.root, d.root)) throw new Error(`diff ${d.nonce}: root differs from the stored one`);
      ctx.replica.adopt(d, next);
      adopted++;
    }
  }
  if (adopted === 0) throw new Error('no stored diff after our latest nonce');
  // Queued txs the adopted diffs applied (or made moot) can never apply now.
  const env = txEnv(ctx.replica.state.latestNonce + 1n, ctx.applyCtx);
  const live = (id: bigint) => {
    const status = ctx.replica.state.inferences.get(id)?.status;
    return status === InferenceStatus.Pending || status === InferenceStatus.Started;
  };
  const moot = ctx.pending
    .snapshot()
    .filter((e) =>
      e.tx.tx.kind === 'timeoutInference'
        ? !live(e.tx.tx.msg.inferenceId)
        : checkHostTx(ctx.replica.state, e.tx.tx, env) !== undefined,
    );
  ctx.pending.remove(moot);
  ctx.writes.delete(moot.map((e) => e.key));
  return adopted;
}
