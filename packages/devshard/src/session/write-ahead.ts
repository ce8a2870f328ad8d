// Composing the next diff and persisting it before anything is sent (devshard-protocol.md §7.1 steps
// 1–4, architecture §2.3). Composition runs under the session's compose lock, so nonces are taken one
// at a time, each on the tip of the diffs composed before it, durable or not (pipeline.ts); the
// write-aheads run in nonce order behind it, several diffs per write when they queued meanwhile.
// State is immutable: a composed state is adopted only once the store holds its diff and every one
// before it, so a refused write changes nothing and nothing of it, or of any diff after it, was
// sent; a write of unknown outcome is settled by append.ts.
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
import { type ComposedDiff, composeTip, offerable } from './pipeline.js';
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

function includeRoot(ctx: Pick<SessionContext, 'replica' | 'settings' | 'pipeline'>): boolean {
  const mode = ctx.settings.postStateRoot;
  if (mode !== 'calibrate') return mode === 'always';
  // Until a host confirms a root that covers a height stamp, the unpinned record fields (§12 #1)
  // could make hosts reject the diff; before any stamp the root is fully pinned. A stamped diff
  // still in flight counts as stamped: the next diff's state covers it.
  const stamps = ctx.replica.stamps;
  if (stamps.firstStampNonce === undefined) return !ctx.pipeline.stampedInFlight;
  return stamps.calibrated;
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
  /** The nonce the caller numbered `extra` for (a StartInference's id): refused if the tip moved. */
  readonly nonce?: bigint;
}

/** Most diffs one write-ahead carries (SessionStore.appendDiffs). */
const MAX_DIFFS_PER_WRITE = 64;

/**
 * Waits until every composed diff is durable and adopted (or voided): for the composers that read
 * the replica itself (flush, timeouts, finalize: the phase, the open inferences), so the state they
 * read is the one their diff follows. Caller holds ctx.composeLock, so nothing new is composed.
 */
export function settleComposed(ctx: Pick<SessionContext, 'pipeline'>): Promise<void> {
  return ctx.pipeline.idle();
}

/** A diff composed on the tip: `durable` settles once it is stored and adopted, or voided. */
export interface Composed {
  readonly stored: StoredDiff;
  readonly durable: Promise<Committed>;
}

/**
 * Composes nonce tip + 1 from the pending queue plus `extra` (Start, FinalizeRound), signs it and
 * appends it to the store. Returns undefined when `requireTxs` and nothing applies. Caller holds
 * ctx.composeLock. Waits for the diffs in flight first (settleComposed), then for its own write.
 */
export async function composeAndPersist(
  ctx: SessionContext,
  extra: readonly EncodedTx[],
  options: ComposeOptions = {},
): Promise<Committed | undefined> {
  await settleComposed(ctx);
  const composed = await composeNext(ctx, extra, options);
  return composed?.durable;
}

/**
 * Composes and signs nonce tip + 1 on the not-yet-durable tip (pipeline.ts) and queues it for the
 * write-ahead without waiting for it: the caller sends nothing of it before `durable` resolves
 * (architecture §2.3), which happens only once it and every diff before it are in the store. Caller
 * holds ctx.composeLock.
 */
export async function composeNext(
  ctx: SessionContext,
  extra: readonly EncodedTx[],
  options: ComposeOptions = {},
): Promise<Composed | undefined> {
  await ctx.guard.assertUsable();
  // A write-ahead of unknown outcome owns its nonces until the store says otherwise.
  if (ctx.replica.unresolved) await resolveUnresolved(ctx);
  // From here to the queueing below nothing awaits: the tip cannot move under the composition.
  const state = composeTip(ctx);
  const nonce = state.latestNonce + 1n;
  if (options.nonce !== undefined && options.nonce !== nonce) {
    // An earlier write failed and voided the diffs this request was numbered after.
    throw new SessionError(
      SessionErrorCode.WriteFailed,
      `nonce ${options.nonce} was voided by a failed write-ahead before it; next nonce ${nonce}`,
    );
  }
  const inReserve = state.phase === SessionPhase.Active && nonce > reserveStart(ctx);
  const offered: PendingEntry[] = offerable(ctx).filter(
    (e) => !(inReserve && RESERVE_FORBIDDEN.has(e.tx.tx.kind)),
  );

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
    // Only ever on the adopted state (flush waits for the diffs in flight: settleComposed).
    if (ctx.pipeline.size === 0) {
      ctx.pending.remove(done);
      ctx.writes.delete(done.map((e) => e.key));
    }
    return undefined;
  }

  const stored: StoredDiff = {
    nonce,
    diff: signDiff(ctx.signer, ctx.escrowId, composed.diff),
    root: composed.state.root,
    warmKeysBound: composed.effects.warmKeysBound,
    ...(options.payload ? { payload: options.payload } : {}),
  };
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
  const stamped = composed.diff.txs.some((t) => isStamped(state, t.tx));
  const commit = (): Committed => {
    // Committed: from here on the diff exists and must eventually reach every host. The replica
    // must be exactly where this diff was composed: adoption in nonce order (replica.ts).
    if (ctx.replica.state !== state) {
      throw new Error(`diff ${nonce} was composed on another state than the replica's`);
    }
    ctx.replica.adopt(stored, composed.state);
    ctx.pending.remove(done);
    if (ctx.replica.stamps.firstStampNonce === undefined && stamped) ctx.replica.stamped(nonce);
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
  let resolve!: (c: Committed) => void;
  let reject!: (e: unknown) => void;
  const durable = new Promise<Committed>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A caller that gave up (a burned nonce whose inference was refused) must not leave it unhandled.
  durable.catch(() => undefined);
  ctx.pipeline.push({
    stored,
    base: state,
    state: composed.state,
    consumed: done,
    leftPending,
    stamped,
    commit,
    resolve,
    reject,
  });
  if (!ctx.pipeline.pumping) void pump(ctx);
  return { stored, durable };
}

/**
 * Writes the queued diffs, a write-ahead at a time: whatever queued while one was in flight goes in
 * the next, together. A landed write adopts its diffs in nonce order and only then settles their
 * requests, so nothing of a diff is sent before it and every diff before it are durable. A failed
 * one voids itself and everything queued after it, none of it written or sent: their requests fail
 * with `write_failed` (retryable) and the next diff is composed on the replica again; an unknown
 * outcome stays in `replica.unresolved` and is settled before anything else is composed (append.ts).
 */
async function pump(ctx: SessionContext): Promise<void> {
  const p = ctx.pipeline;
  p.pumping = true;
  try {
    while (p.hasQueued) {
      const batch = p.take(ctx.store.appendDiffs ? MAX_DIFFS_PER_WRITE : 1);
      let failure: { error: unknown } | undefined;
      try {
        await writeBatch(ctx, batch);
      } catch (error) {
        failure = { error };
      }
      if (failure) {
        const { writing, queued } = p.voidAll();
        for (const d of writing) d.reject(failure.error);
        const first = writing[0]?.stored.nonce;
        for (const d of queued) {
          d.reject(
            new SessionError(
              SessionErrorCode.WriteFailed,
              `nonce ${d.stored.nonce} voided: the write-ahead of nonce ${first} before it failed`,
              failure.error,
            ),
          );
        }
        continue;
      }
      for (const d of p.landed()) {
        let committed: Committed;
        try {
          committed = d.commit();
        } catch (error) {
          // Cannot happen while every adoption goes through here in order; if it does, the memory
          // view is not the store's: stop the session rather than send from it.
          const fault = ctx.guard.faultWith(
            new SessionError(SessionErrorCode.CorruptStore, (error as Error).message, error),
          );
          d.reject(fault);
          continue;
        }
        d.resolve(committed);
      }
    }
  } finally {
    p.pumping = false;
    p.notifyIdle();
  }
}

/** One write-ahead of consecutive composed diffs and the waiting writes (session-writes.ts). */
function writeBatch(ctx: SessionContext, batch: readonly ComposedDiff[]): Promise<void> {
  const consumed = batch.flatMap((d) => d.consumed.map((e) => e.key));
  const leftPending = batch.flatMap((d) => d.leftPending);
  // After every saveWrites started before it (session-writes.ts), so a consumed key's own add has
  // landed and cannot come back after this diff deleted it.
  return ctx.writes.afterSaves(async () => {
    // One statement: the diffs and their payloads (§2.3 write-ahead: durable before they are
    // sent), the deletion of the pending txs they consume (§7.1 step 4 "clear the queue"), the
    // payloads they make useless (§7.4 needs one only while its inference is Pending), and whatever
    // the session's earlier answers left waiting (host progress, signatures, queue changes). All of
    // it commits with the diffs or not at all.
    const waiting = ctx.writes.take();
    const write: Unresolved = {
      diffs: batch.map((d) => d.stored),
      writes: diffWrites(waiting, consumed, leftPending),
      commit: () => {
        for (const d of batch) d.commit();
      },
    };
    try {
      await writeAhead(ctx, write);
    } catch (error) {
      // Refused: nothing was written, so what waited rides in the next write (the consumed keys
      // stay queued). Unknown: the identical append, with the same writes, is repeated before
      // anything else is composed (append.ts).
      if (ctx.replica.unresolved !== write) ctx.writes.restore(waiting);
      throw error;
    }
  });
}
