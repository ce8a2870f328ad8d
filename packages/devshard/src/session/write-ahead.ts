// Composing the next diff and persisting it before anything is sent (devshard-protocol.md §7.1 steps
// 1–4, architecture §2.3). Runs under the session's compose lock, so nonces are taken one at a time.
// State is immutable: the composed state is adopted only once the store holds the diff, so a refused
// write changes nothing and nothing was sent; a write of unknown outcome is settled by append.ts.
import { DevshardError, DevshardErrorCode } from '../errors.js';
import { SessionPhase } from '../hash/root-formula.js';
import type { PayloadWire } from '../json/wire.js';
import type { DevshardTx, EncodedTx, TxKind } from '../proto/devshard-tx.js';
import { signDiff } from '../signing/diff.js';
import { txEnv } from '../state/apply-context.js';
import { orderCandidates } from '../state/candidates.js';
import { type ComposeResult, composeDiff } from '../state/compose.js';
import { checkNonceLimit } from '../state/diff-checks.js';
import { InferenceStatus, type SessionState } from '../state/types.js';
import { resolveUnresolved, writeAhead } from './append.js';
import { SessionError, SessionErrorCode } from './errors.js';
import { checkHostTx } from './host-tx-check.js';
import type { PendingEntry } from './pending-queue.js';
import type { Committed, Unresolved } from './replica.js';
import { type SessionContext, targetAddress } from './session-context.js';
import { scheduleSnapshot } from './snapshots.js';
import type { StoredDiff } from './store.js';
import { diffWrites } from './write-buffer.js';

/** Kinds the hosts refuse inside the finalize reserve while Active (§7.5). */
const RESERVE_FORBIDDEN: ReadonlySet<string> = new Set([
  'startInference',
  'timeoutInference',
  'validation',
  'validationVote',
]);

/** First nonce of the finalize reserve: max_nonce − (N + 1) is the last nonce allowed new work. */
export function reserveStart(ctx: Pick<SessionContext, 'replica' | 'settings'>): bigint {
  return ctx.settings.maxNonce - BigInt(ctx.replica.state.group.slots.length + 1);
}

function includeRoot(ctx: Pick<SessionContext, 'replica' | 'settings'>): boolean {
  const mode = ctx.settings.postStateRoot;
  if (mode !== 'calibrate') return mode === 'always';
  // Until a host confirms a root that covers a height stamp, the unpinned record fields (§12 #1)
  // could make hosts reject the diff; before any stamp the root is fully pinned.
  return ctx.replica.stamps.firstStampNonce === undefined || ctx.replica.stamps.calibrated;
}

export function isStamped(state: SessionState, tx: DevshardTx): boolean {
  if (!state.profile.heightStamps) return false;
  switch (tx.kind) {
    case 'startInference':
    case 'confirmStart':
    case 'finishInference':
      return tx.msg.observedBlockHash.length > 0;
    default:
      return false;
  }
}

function composeError(error: unknown): never {
  if (error instanceof DevshardError) {
    if (error.code === DevshardErrorCode.InsufficientBalance) {
      throw new SessionError(SessionErrorCode.InsufficientBalance, error.message, error);
    }
    if (error.code === DevshardErrorCode.NonceLimitExceeded) {
      throw new SessionError(SessionErrorCode.NonceLimit, error.message, error);
    }
    if (error.code === DevshardErrorCode.MaxTokensBelowFloor) {
      throw new SessionError(SessionErrorCode.MaxTokensBelowFloor, error.message, error);
    }
    if (error.code === DevshardErrorCode.SessionFinalizing) {
      throw new SessionError(SessionErrorCode.NotActive, error.message, error);
    }
    throw new SessionError(SessionErrorCode.ComposeFailed, error.message, error);
  }
  throw error;
}

export interface ComposeOptions {
  /** The inference payload of a StartInference in `extra`, persisted with the diff. */
  readonly payload?: PayloadWire;
  /** Skip (consume no nonce) when no tx would be applied. */
  readonly requireTxs?: boolean;
}

/**
 * Composes nonce latest + 1 from the pending queue plus `extra` (Start, FinalizeRound), signs it and
 * appends it to the store. Returns undefined when `requireTxs` and nothing applies. Caller holds
 * ctx.composeLock.
 */
export async function composeAndPersist(
  ctx: SessionContext,
  extra: readonly EncodedTx[],
  options: ComposeOptions = {},
): Promise<Committed | undefined> {
  await ctx.guard.assertUsable();
  // A diff whose write-ahead has an unknown outcome owns its nonce until the store says otherwise.
  if (ctx.replica.unresolved) await resolveUnresolved(ctx);
  const state = ctx.replica.state;
  const nonce = state.latestNonce + 1n;
  const inReserve = state.phase === SessionPhase.Active && nonce > reserveStart(ctx);
  const offered: PendingEntry[] = ctx.pending
    .snapshot()
    .filter((e) => !(inReserve && RESERVE_FORBIDDEN.has(e.tx.tx.kind)));

  let composed: ComposeResult;
  try {
    composed = composeDiff(
      state,
      orderCandidates(
        offered.map((e) => e.tx),
        extra,
      ),
      ctx.applyCtx,
      { withPostStateRoot: includeRoot(ctx) },
    );
    checkNonceLimit(
      state,
      nonce,
      composed.diff.txs.map((t) => t.tx),
      ctx.settings.maxNonce,
    );
  } catch (error) {
    composeError(error);
  }

  // Offered entries leave the queue once composed, except dropped ones that can still apply later
  // (a Finish whose Confirm arrives after this diff): they stay for the next diff.
  const env = txEnv(nonce + 1n, ctx.applyCtx);
  const droppedTx = new Set(composed.dropped.map((d) => d.tx));
  const done = offered.filter(
    (e) => !droppedTx.has(e.tx) || checkHostTx(composed.state, e.tx.tx, env) !== undefined,
  );

  if (options.requireTxs && composed.diff.txs.length === 0) {
    ctx.pending.remove(done);
    ctx.writes.delete(done.map((e) => e.key));
    return undefined;
  }

  const stored: StoredDiff = {
    nonce,
    diff: signDiff(ctx.signer, ctx.escrowId, composed.diff),
    root: composed.state.root,
    warmKeysBound: composed.effects.warmKeysBound,
    ...(options.payload ? { payload: options.payload } : {}),
  };
  const consumed = done.map((e) => e.key);
  // Inferences this diff moves out of Pending (a Confirm or a refused timeout names them).
  const leftPending = [
    ...new Set(
      composed.diff.txs
        .map((t) =>
          t.tx.kind === 'confirmStart' || t.tx.kind === 'timeoutInference' ? t.tx.msg.inferenceId : undefined,
        )
        .filter(
          (id): id is bigint =>
            id !== undefined &&
            state.inferences.get(id)?.status === InferenceStatus.Pending &&
            composed.state.inferences.get(id)?.status !== InferenceStatus.Pending,
        ),
    ),
  ];
  const commit = (): Committed => {
    // Committed: from here on the diff exists and must eventually reach every host.
    ctx.replica.adopt(stored, composed.state);
    ctx.pending.remove(done);
    if (
      ctx.replica.stamps.firstStampNonce === undefined &&
      composed.diff.txs.some((t) => isStamped(state, t.tx))
    ) {
      ctx.replica.stamped(nonce);
    }
    ctx.replica.prunePayloads();
    scheduleSnapshot(ctx);
    const target = targetAddress(ctx, nonce);
    ctx.emit({
      type: 'diff',
      nonce,
      target,
      txs: composed.diff.txs.map((t) => t.tx.kind).filter((k): k is TxKind => k !== 'none'),
      dropped: composed.dropped.map((d) => ({ kind: d.tx.tx.kind, code: d.error.code })),
    });
    return { stored, target, dropped: composed.dropped };
  };
  // After every saveWrites started before it (session-writes.ts), so a consumed key's own add has
  // landed and cannot come back after this diff deleted it.
  return ctx.writes.afterSaves(async () => {
    // One statement: the diff and its payload (§2.3 write-ahead: durable before it is
    // sent), the deletion of the pending txs it consumes (§7.1 step 4 "clear the queue"), the
    // payloads it makes useless (§7.4 needs one only while its inference is Pending), and whatever
    // the session's earlier answers left waiting (host progress, signatures, queue changes). All of
    // it commits with the diff or not at all.
    const waiting = ctx.writes.take();
    const write: Unresolved = { stored, writes: diffWrites(waiting, consumed, leftPending), commit };
    try {
      await writeAhead(ctx, write);
    } catch (error) {
      // Refused: nothing was written, so what waited rides in the next write (the consumed keys
      // stay queued). Unknown: the identical append, with the same writes, is repeated before
      // anything else is composed (append.ts).
      if (ctx.replica.unresolved !== write) ctx.writes.restore(waiting);
      throw error;
    }
    return commit();
  });
}
