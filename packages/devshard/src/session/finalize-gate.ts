// The finalize gate: never bill an inference the hosts did not finish. At the settlement drain
// (devshard-protocol.md §5.6) every Pending or Started record is charged its full reservation, so
// finalizing while one is open pays a host for work it refused, stalled on, or finished for less.
// The reference gateway refuses to finalize while a started inference has neither a Finish nor a
// timeout; this gate does the same from the state itself — not from the in-flight counter, which is
// 0 in a process that has just taken the escrow over.
//
// Before refusing it resolves what it can: it asks each open inference's executor for its mempool
// (the Confirm and Finish of an answer served before a takeover, §7.4), sends what is queued, and runs
// the timeout rounds of §7.4 for every record past its deadline, so a refused or stalled inference
// ends TimedOut at cost 0 and is counted missed for its executor. What is still open then is
// answered with `completion_pending`, listing the nonces and when the next deadline falls; the owner
// retries. An inference that cannot be timed out (its executor holds enough slots to block the vote,
// dominant-hosts.ts) is listed as `unresolvable`: finalizing then bills its reservation, which the
// owner must choose explicitly (`billUnresolved`), never by default.
import { SessionPhase } from '../hash/root-formula.js';
import { openRecordsOf } from '../state/live-records.js';
import { type InferenceRecord, InferenceStatus, type SessionState } from '../state/types.js';
import { recoverFromMempools } from './delivery.js';
import { isDominant } from './dominant-hosts.js';
import { SessionError, SessionErrorCode } from './errors.js';
import { flushDiff } from './flush.js';
import { type SessionContext, targetAddress } from './session-context.js';
import { queueWritten } from './session-writes.js';
import { checkTimeouts } from './timeouts.js';

export interface FinalizeGateOptions {
  /**
   * Finalize even though inferences are still Pending/Started: the drain bills each its full
   * reservation (§5.6). For an owner that decided so, e.g. at the end of the settlement window.
   */
  readonly billUnresolved?: boolean;
}

/** `completion_pending`: finalize would bill inferences that have neither a Finish nor a timeout. */
export class CompletionPendingError extends SessionError {
  /** Inference ids (= nonces) still Pending or Started. */
  readonly nonces: readonly bigint[];
  /** Those whose executor can block a timeout vote (dominant host): only billing resolves them. */
  readonly unresolvable: readonly bigint[];
  /** Unix second of the earliest deadline (+ skew) not yet passed, if any: retry then. */
  readonly retryAt: bigint | undefined;

  constructor(nonces: readonly bigint[], unresolvable: readonly bigint[], retryAt: bigint | undefined) {
    super(
      SessionErrorCode.CompletionPending,
      `inferences without Finish or timeout: ${nonces.join(', ')}` +
        (unresolvable.length > 0 ? `; unresolvable (dominant executor): ${unresolvable.join(', ')}` : '') +
        (retryAt !== undefined ? `; next deadline at ${retryAt}` : ''),
    );
    this.name = 'CompletionPendingError';
    this.nonces = nonces;
    this.unresolvable = unresolvable;
    this.retryAt = retryAt;
  }
}

/** Live records the drain would bill at their reservation. */
export function openInferences(state: SessionState): InferenceRecord[] {
  return openRecordsOf(state.inferences);
}

/**
 * Open records the queued txs do not settle: finalize round 0 carries the queue before its
 * MsgFinalizeRound (§8.1), so a queued Finish (with its Confirm when still Pending) or our queued
 * timeout resolves a record without a diff of its own.
 */
export function unresolvedInferences(ctx: Pick<SessionContext, 'replica' | 'pending'>): InferenceRecord[] {
  const queued = (kind: string, id: bigint) => ctx.pending.has(`${kind}:${id}`);
  return openInferences(ctx.replica.state).filter(
    (r) =>
      !queued('timeout', r.id) &&
      !(queued('finish', r.id) && (r.status === InferenceStatus.Started || queued('confirm', r.id))),
  );
}

function deadlineOf(ctx: Pick<SessionContext, 'replica' | 'settings'>, r: InferenceRecord): bigint {
  const { config } = ctx.replica.state;
  const skew = ctx.settings.timeoutSkewSeconds;
  return r.status === InferenceStatus.Pending
    ? r.startedAt + config.refusalTimeout + skew
    : r.confirmedAt + config.executionTimeout + skew;
}

/**
 * Resolves what it can, then either marks the session finalizing (no new inference composes after
 * this) or throws CompletionPendingError. Only while Active: a session already Finalizing (resumed
 * mid-finalize) has no choice left but to finish its rounds.
 */
export async function passFinalizeGate(ctx: SessionContext, options: FinalizeGateOptions): Promise<void> {
  if (ctx.replica.state.phase !== SessionPhase.Active) return;
  if (unresolvedInferences(ctx).length > 0) {
    // The same mempool reads as a takeover (delivery.ts), limited to what is still unresolved; the
    // Confirm/Finish found are durable (session-writes.ts) before they are relied on.
    await recoverFromMempools(ctx, unresolvedInferences(ctx));
    await queueWritten(ctx);
  }
  if (unresolvedInferences(ctx).length > 0) {
    // Apply what is queued (a Confirm makes a refusal an execution case), then vote on deadlines.
    if (ctx.pending.size > 0) await flushDiff(ctx, []);
    await checkTimeouts(ctx);
  }
  // Checked under the compose lock, so no inference composes between the check and the flag.
  await ctx.composeLock.run(async () => {
    // An inference composed but still in flight is open too: the replica holds it once it lands.
    await ctx.pipeline.idle();
    const open = unresolvedInferences(ctx);
    if (open.length > 0 && !options.billUnresolved) {
      const now = ctx.clock.nowSeconds();
      const unresolvable = open
        .filter((r) => deadlineOf(ctx, r) <= now && isDominant(ctx.replica.state, targetAddress(ctx, r.id)))
        .map((r) => r.id);
      // bigint: no Math.min; the earliest deadline still ahead.
      const retryAt = open
        .map((r) => deadlineOf(ctx, r))
        .filter((d) => d > now)
        .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))[0];
      throw new CompletionPendingError(
        open.map((r) => r.id),
        unresolvable,
        retryAt,
      );
    }
    ctx.finalizing = true;
  });
}
