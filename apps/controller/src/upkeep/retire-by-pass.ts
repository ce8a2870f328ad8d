// The settle-window safety pass of every rotation tick (retire-by.ts), after the stages had their
// turn, whether rotation is on or not:
// - a rotated escrow (`temp`, `regular`) past its retire-by height that no stage is retiring is
//   retired now, whatever the stage machinery says: drained at once (so in-flight requests end and
//   its owner hands it back), then finalized and settled by the settle job like any retirement
//   (rotation-retire.ts retireStep); marker `escrow_past_retire_by` (error level, once per escrow);
// - a `manual` escrow past it is only reported (same marker): it is the operator's to settle
//   (gateway-spec.md §8 "Manual escrow wall-clock expiry: none");
// - an escrow whose window has closed unsettled is past help (the chain refuses its settle): marker
//   `escrow_settle_window_closed_unsettled` once, and listed with its amount in Redis for /v1/status
//   (settle-window-summary.ts) and in /v1/debug/rotation;
// - the gauge `devshard_gateway_escrows_past_retire_by` counts every unsettled escrow past its
//   retire-by height (a closed window included), whoever retires it.
// Without a block time estimate only closed windows are known (chain/block-time.ts); a stale chain
// reading (the switch behind the height) changes nothing.
import { summarizeClosedWindows, writeSettleWindowSummary } from '@gonka-gateway/shared';
import type { ControllerContext } from '../controller-context.js';
import type { ChainPhase } from './chain-phase.js';
import { type EscrowWindow, pastRetireBy, readSettleWindows } from './retire-by.js';
import { recordEvent, retiringStages } from './rotation-record.js';
import { type RetireDeps, retireStep, startRetiring } from './rotation-retire.js';
import type { RotationModelSettings } from './rotation-settings.js';

const ROTATED = new Set(['temp', 'regular']);

export interface RetireByResult {
  /** Unsettled escrows past their retire-by height (closed windows included). */
  pastDue: EscrowWindow[];
  /** Those whose window has closed. */
  closed: EscrowWindow[];
  /** Rotated escrows this pass drained itself. */
  drained: bigint[];
}

export async function retirePastDue(
  ctx: ControllerContext,
  deps: RetireDeps,
  phase: ChainPhase,
  models: ReadonlyMap<string, RotationModelSettings>,
): Promise<RetireByResult> {
  const result: RetireByResult = { pastDue: [], closed: [], drained: [] };
  if (phase.blocksToSwitch < 0n) return result;
  const windows = await readSettleWindows(ctx, phase);
  result.closed = windows.escrows.filter((e) => e.closesAt === null);
  result.pastDue = windows.escrows.filter((e) => pastRetireBy(e, phase.blockHeight));
  await writeSettleWindowSummary(
    ctx.redis,
    ctx.keys,
    summarizeClosedWindows(
      result.closed.map((e) => ({
        escrow_id: e.escrowId.toString(),
        model_id: e.modelId,
        amount: e.amount.toString(),
        epoch_index: e.epoch.toString(),
        state: e.state,
      })),
    ),
  );
  ctx.metrics?.escrowsPastRetireBy.set(result.pastDue.length);

  const tracked = new Set((await retiringStages(ctx.sql)).flatMap((s) => s.retiring.map(String)));
  for (const e of result.pastDue) {
    const id = e.escrowId.toString();
    const detail = { escrow_id: id, role: e.role };
    if (e.closesAt === null) {
      await recordEvent(
        ctx,
        {
          modelId: e.modelId,
          marker: 'escrow_settle_window_closed_unsettled',
          epoch: e.epoch,
          detail: { ...detail, amount: e.amount.toString(), state: e.state },
        },
        {
          once: true,
          message: `settle window closed with the escrow unsettled: the chain refuses its settle (rule 9) and ${e.amount} ngonka stay locked`,
        },
      );
      continue;
    }
    const at = `retire-by height ${e.retireBy!.height}, window closes at ${e.closesAt}, chain at ${phase.blockHeight}`;
    if (!ROTATED.has(e.role)) {
      await recordEvent(
        ctx,
        { modelId: e.modelId, marker: 'escrow_past_retire_by', epoch: e.epoch, detail },
        { once: true, message: `manual escrow past its retire-by height (${at}): settle it now` },
      );
      continue;
    }
    if (tracked.has(id)) continue; // its stage drives the retirement on every tick
    if (e.state === 'active') {
      await startRetiring(ctx, [e.escrowId]);
      result.drained.push(e.escrowId);
    }
    await recordEvent(
      ctx,
      { modelId: e.modelId, marker: 'escrow_past_retire_by', epoch: e.epoch, detail },
      {
        once: true,
        message: `escrow past its retire-by height (${at}): draining, finalizing and settling it now`,
      },
    );
    try {
      await advance(ctx, deps, e, models.get(e.modelId));
    } catch (err) {
      // One escrow's trouble (a finalize still waiting on an execution timeout, the chain
      // unreachable) must not stop the others; the next tick tries again.
      ctx.logger.warn(
        { marker: 'escrow_past_retire_by', escrowId: id, err: (err as Error).message },
        'retiring an escrow past its retire-by height: retried next tick',
      );
    }
  }
  return result;
}

/** One retirement step of an escrow no stage tracks; trouble is recorded as a stage would. */
async function advance(
  ctx: ControllerContext,
  deps: RetireDeps,
  e: EscrowWindow,
  model: RotationModelSettings | undefined,
): Promise<void> {
  // Once settled it leaves the unsettled escrows this pass reads (the settle job logs it).
  const step = await retireStep(ctx, deps, e.escrowId, model);
  const escrow_id = e.escrowId.toString();
  if (step.kind === 'failed') {
    await recordEvent(
      ctx,
      {
        modelId: e.modelId,
        marker: 'escrow_rotation_settle_failed',
        epoch: e.epoch,
        detail: { escrow_id, error: step.error },
      },
      { once: true },
    );
  } else if (step.kind === 'waiting') {
    await recordEvent(
      ctx,
      { modelId: e.modelId, marker: 'escrow_rotation_settle_waiting', epoch: e.epoch, detail: { escrow_id } },
      { once: true, message: 'rotation settlement waits: the escrow has requests in flight' },
    );
  }
}
