// Retiring rotated-out escrows (spec §3.4 "finalize and settle"; §3.1 and §7: rotation settlement
// waits while the escrow has requests in flight). A stage first marks its escrows `draining` (Postgres,
// then the pool entry, so proxies stop routing new chat at once); every tick then looks at each one:
// requests still in flight → skipped this tick (marker escrow_rotation_settle_waiting, once);
// none → the settle job is enqueued (job id settle-{id}: finalize, then MsgSettleDevshardEscrow),
// or, with the model's `settle` switch off, the escrow is only finalized once its owner has handed
// the lease back. Settled (or, with settle off, finalized) escrows leave the stage's list; a settle
// the chain refused is counted as failed and left to the operator.
import { escrowTable, GatewayError } from '@gonka-gateway/shared';
import type { ControllerContext } from '../controller-context.js';
import { finalizeEscrow } from '../escrow/finalize.js';
import { inFlightCount, publishPoolStatus } from '../escrow/pool-status.js';
import { transition } from '../escrow/transitions.js';
import { recordEvent, type StageRow, updateStage } from './rotation-record.js';
import type { RotationModelSettings } from './rotation-settings.js';

export interface RetireDeps {
  /** Enqueues finalize + settle of an escrow once (jobs/workers.ts); returns the job id. */
  enqueueSettle(escrowId: bigint, privateKeyEnv: string): Promise<string>;
  /** Why its settle job gave up for good (no retry can help), if it did. */
  settleGaveUp?(escrowId: bigint): Promise<string | undefined>;
}

/** Stops routing to the escrows (active → draining); returns those that are not settled yet. */
export async function startRetiring(ctx: ControllerContext, ids: readonly bigint[]): Promise<bigint[]> {
  const out: bigint[] = [];
  for (const id of ids) {
    const moved = await transition(ctx.sql, id, 'drain');
    if (moved.kind === 'missing') continue;
    if (moved.kind === 'refused' && moved.state === 'settled') continue;
    if (moved.kind === 'moved') await publishPoolStatus(ctx, id, 'draining');
    out.push(id);
  }
  return out;
}

/** Where one retiring escrow stands after a pass (retireStep). */
export type RetireStep =
  /** Deleted by the operator: nothing left to do. */
  | { kind: 'gone' }
  | { kind: 'settled' }
  /** With the model's settle switch off: finalized, which was the goal. */
  | { kind: 'finalized' }
  /** The settle failed for good (a refused tx, a rule violation): the operator takes over. */
  | { kind: 'failed'; error: string }
  /** Requests in flight: settlement waits (spec §3.1). */
  | { kind: 'waiting' }
  /** Under way (settle job enqueued, finalize retried next pass); `error` says what held it up. */
  | { kind: 'pending'; error?: string };

/**
 * One pass over one retiring escrow: drain it again if something re-activated it, then — once no
 * request is in flight — enqueue its settle job, or with the settle switch off finalize it once its
 * owner handed the lease back. `model` is the escrow's model in the rotation settings, if listed.
 */
export async function retireStep(
  ctx: ControllerContext,
  deps: RetireDeps,
  id: bigint,
  model: RotationModelSettings | undefined,
): Promise<RetireStep> {
  const settle = model?.settle ?? true;
  const e = await escrowTable.findEscrow(ctx.sql, id);
  if (!e) return { kind: 'gone' };
  if (e.state === 'settled') return { kind: 'settled' };
  const gaveUp =
    e.state === 'finalized' && e.lastError ? e.lastError : settle ? await deps.settleGaveUp?.(id) : undefined;
  // The settle tx failed on chain (settle.ts puts it back to finalized with the cause), or the job
  // stopped on a rule violation: re-enqueueing cannot help; the operator takes over.
  if (gaveUp) return { kind: 'failed', error: gaveUp };
  if (!settle && (e.state === 'finalized' || e.state === 'settling')) return { kind: 'finalized' };
  if (e.state === 'active') {
    // Re-activated elsewhere or a crash between the stage's decision and the drain: drain again.
    await startRetiring(ctx, [id]);
  }
  if ((await inFlightCount(ctx, id)) > 0) return { kind: 'waiting' };
  if (settle) {
    const keyEnv = model?.privateKeyEnv ?? e.signerKeyEnv;
    if (!keyEnv) return { kind: 'pending', error: `escrow ${id}: no private_key_env to settle with` };
    await deps.enqueueSettle(id, keyEnv);
  } else if ((await ctx.redis.get(ctx.keys.escrowLease(id))) === null) {
    try {
      await finalizeEscrow(ctx, id);
    } catch (err) {
      // A busy owner or an unresolved inference: the next tick tries again.
      if (!(err instanceof GatewayError && err.code === 'conflict')) throw err;
      return { kind: 'pending', error: `escrow ${id}: ${err.message}` };
    }
  }
  return { kind: 'pending' };
}

/** One pass over a retiring stage's escrows; returns the updated row. */
export async function advanceRetiring(
  ctx: ControllerContext,
  deps: RetireDeps,
  row: StageRow,
  model: RotationModelSettings | undefined,
): Promise<StageRow> {
  const remaining: bigint[] = [];
  let { settled, failed, lastError } = row;
  for (const id of row.retiring) {
    const step = await retireStep(ctx, deps, id, model);
    if (step.kind === 'settled') {
      settled++;
      await recordEvent(ctx, {
        modelId: row.modelId,
        marker: 'escrow_rotation_settled',
        epoch: row.epoch,
        detail: { escrow_id: id.toString(), stage: row.stage },
      });
    } else if (step.kind === 'failed') {
      failed++;
      lastError = `escrow ${id}: ${step.error}`;
      await recordEvent(ctx, {
        modelId: row.modelId,
        marker: 'escrow_rotation_settle_failed',
        epoch: row.epoch,
        detail: { escrow_id: id.toString(), error: step.error },
      });
    } else if (step.kind === 'waiting') {
      await recordEvent(
        ctx,
        {
          modelId: row.modelId,
          marker: 'escrow_rotation_settle_waiting',
          epoch: row.epoch,
          detail: { escrow_id: id.toString() },
        },
        { once: true, message: 'rotation settlement waits: the escrow has requests in flight' },
      );
      remaining.push(id);
    } else if (step.kind === 'pending') {
      if (step.error) lastError = step.error;
      remaining.push(id);
    }
  }
  // Only a stage past its creates is finished by its last retirement (a creating stage may already
  // retire escrows whose settle window is ending, rotation-tick.ts retireExpiring).
  const done = remaining.length === 0 && row.status === 'retiring';
  const next = await updateStage(ctx.sql, row, {
    retiring: remaining,
    settled,
    failed,
    lastError,
    ...(done ? { status: 'done' as const } : {}),
  });
  if (done) {
    await recordEvent(ctx, {
      modelId: row.modelId,
      marker: 'escrow_rotation_stage_done',
      epoch: row.epoch,
      detail: { stage: row.stage, settled, failed },
    });
  }
  return next;
}
