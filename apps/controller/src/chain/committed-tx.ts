// The one way the controller sends a chain transaction (architecture §3, chain-and-network.md §2.4):
// under the business key's advisory lock, a live commitment of that key is resumed — included →
// done; otherwise the chain is asked about its hash, and a tx not seen yet is re-sent with the SAME
// bytes (one hash executes at most once), never re-signed with a new sequence. Only with no live
// commitment (or one that expired unseen, so it can never land) is a new tx prepared; its hash and
// bytes are stored before it is broadcast, so a crash or a lost answer is reconciled by hash. What
// is specific to one kind of tx (its checks, what an inclusion means) is in its hooks.
import {
  broadcastAndWait,
  type PreparedTx,
  type TxFailed,
  type TxIncluded,
  type TxOutcome,
  type TxUnknown,
} from '@gonka-gateway/chain';
import type { ControllerContext } from '../controller-context.js';
import {
  type Commitment,
  type CommitmentKind,
  liveCommitment,
  markBroadcast,
  reconcileCommitment,
  recordCommitment,
  recordOutcome,
  withBusinessLock,
} from './commitments.js';

/** An answer that ends the run before anything (more) is sent. */
export interface Done<T> {
  done: T;
}

/** A freshly signed tx, and what its commitment stores beside it (for a resume or a reconciliation). */
export interface Prepared {
  tx: PreparedTx;
  result?: Record<string, unknown>;
}

export interface CommittedTx<T> {
  kind: CommitmentKind;
  businessKey: string;
  /** Stored on the commitment and on every outcome recorded by this run. */
  escrowId?: bigint;
  /**
   * An inclusion seen after the broadcast is recorded by onIncluded itself, once its own work is
   * done: until then the commitment stays open, so after a crash the reconcile pass still finds it
   * and finishes it (a create's registration, jobs/reconcile-commitments.ts).
   */
  onIncludedRecords?: boolean;
  /** Under the lock, before the live commitment is looked at: an answer ends the run. */
  begin?(): Promise<Done<T> | undefined>;
  /** A live commitment was found: may refuse it (throw) or answer from it without asking the chain. */
  onLive?(live: Commitment): Promise<Done<T> | undefined>;
  /** Checks and signs a new tx (no live commitment can still land), or answers without one. */
  prepare(): Promise<Prepared | Done<T>>;
  /** The commitment of a new tx is stored; runs before its broadcast. */
  onRecorded?(tx: PreparedTx): Promise<void>;
  /**
   * The tx is included. `outcome` is missing when an earlier run already recorded the inclusion
   * (its events are then read back by hash if needed).
   */
  onIncluded(txHash: string, outcome: TxIncluded | undefined): Promise<T>;
  onFailed(outcome: TxFailed): Promise<T>;
  /** Broadcast, but not seen before the poll ended: a later run (or the reconcile pass) asks by hash. */
  onUnknown(outcome: TxUnknown): Promise<T>;
  /** The chain could not be asked about a live commitment; nothing was sent. */
  onUnreachable(txHash: string, reason: string): Promise<T>;
}

export function isDone<T>(value: Prepared | Done<T> | undefined): value is Done<T> {
  return value !== undefined && 'done' in value;
}

export async function runCommittedTx<T>(ctx: ControllerContext, run: CommittedTx<T>): Promise<T> {
  return withBusinessLock(ctx.sql, run.businessKey, async () => {
    const early = await run.begin?.();
    if (early) return early.done;

    const live = await liveCommitment(ctx.sql, run.businessKey);
    if (live) {
      const answered = await run.onLive?.(live);
      if (answered) return answered.done;
      if (live.status === 'included') return run.onIncluded(live.txHash, undefined);
      const reconciled = await reconcileCommitment(ctx.sql, ctx.chain, live);
      ctx.logger.info(
        {
          kind: run.kind,
          businessKey: run.businessKey,
          ...(run.escrowId === undefined ? {} : { escrowId: run.escrowId.toString() }),
          txHash: live.txHash,
          reconciled: reconciled.kind,
        },
        'reconciled commitment',
      );
      switch (reconciled.kind) {
        case 'included':
        case 'failed':
          return concluded(run, reconciled.outcome);
        case 'unreachable':
          return run.onUnreachable(live.txHash, reconciled.reason);
        case 'pending':
          // Not seen yet and still able to land: the SAME bytes again (one hash, executes at most once).
          return send(ctx, run, live.txHash, live.txBytes);
        case 'expired':
          // It can never land: a new tx is safe below.
          break;
      }
    }

    const prepared = await run.prepare();
    if (isDone(prepared)) return prepared.done;
    const { tx } = prepared;
    await recordCommitment(ctx.sql, {
      kind: run.kind,
      businessKey: run.businessKey,
      ...(run.escrowId === undefined ? {} : { escrowId: run.escrowId }),
      tx,
      ...(prepared.result === undefined ? {} : { result: prepared.result }),
    });
    await run.onRecorded?.(tx);
    return send(ctx, run, tx.txHash, tx.txBytes, tx.timeoutTimestampNs);
  });
}

async function send<T>(
  ctx: ControllerContext,
  run: CommittedTx<T>,
  txHash: string,
  txBytes: Uint8Array,
  timeoutTimestampNs?: bigint,
): Promise<T> {
  await markBroadcast(ctx.sql, txHash);
  const outcome = await broadcastAndWait(
    ctx.chain,
    { txHash, txBytes, ...(timeoutTimestampNs === undefined ? {} : { timeoutTimestampNs }) },
    ctx.poll,
  );
  if (outcome.status !== 'included' || !run.onIncludedRecords) {
    await recordOutcome(ctx.sql, outcome, run.escrowId === undefined ? {} : { escrowId: run.escrowId });
  }
  if (outcome.status === 'unknown') return run.onUnknown(outcome);
  return concluded(run, outcome);
}

function concluded<T>(run: CommittedTx<T>, outcome: TxOutcome): Promise<T> {
  if (outcome.status === 'included') return run.onIncluded(outcome.txHash, outcome);
  if (outcome.status === 'failed') return run.onFailed(outcome);
  return run.onUnknown(outcome);
}
