// The creates of one rotation stage (spec §3.4; architecture §3 "no escrow is ever created twice
// for one rotation slot"): slot i of a model, role and epoch is escrow/create.ts under the
// Idempotency-Key rotation-{model}-{role}-{epoch}-{i}, so its commitment makes any later attempt
// resume that slot's tx. A create that failed on chain, or that its pre-checks refused, suppresses the
// model's role for that epoch (rotation_suppressions); an unknown outcome leaves the slot pending.
import { privateKeyFromEnv, queryChainId } from '@gonka-gateway/chain';
import { escrowTable, GatewayError } from '@gonka-gateway/shared';
import type { ControllerContext } from '../controller-context.js';
import { createBusinessKey, createEscrow } from '../escrow/create.js';
import type { RotationStep } from './rotation-plan.js';
import { isSuppressed, type RotationRole, recordEvent, suppress } from './rotation-record.js';
import type { RotationModelSettings } from './rotation-settings.js';

/** The Idempotency-Key of one rotation slot: one slot, at most one escrow. */
export const rotationSlotKey = (modelId: string, role: RotationRole, epoch: bigint, slot: number) =>
  `rotation-${modelId}-${role}-${epoch}-${slot}`;

export interface SlotResults {
  ids: bigint[];
  /** Slots whose create failed on chain or in its pre-checks, or was suppressed after such a failure. */
  failedSlots: number;
  /** Some slot's outcome is unknown or the chain could not be asked: retry next tick. */
  pending: boolean;
  error?: string;
}

export async function createSlots(
  ctx: ControllerContext,
  model: RotationModelSettings,
  step: Extract<RotationStep, { role: RotationRole }>,
  count: number,
): Promise<SlotResults> {
  const out: SlotResults = { ids: [], failedSlots: 0, pending: false };
  let suppressed = await isSuppressed(ctx.sql, model.modelId, step.role, step.epoch);
  const key = privateKeyFromEnv(ctx.env, model.privateKeyEnv);
  const chainId = count > 0 ? await queryChainId(ctx.chain) : '';
  for (let slot = 0; slot < count; slot++) {
    const idempotencyKey = rotationSlotKey(model.modelId, step.role, step.epoch, slot);
    // A suppressed role still answers slots that were created before the failure (stored answers).
    if (suppressed && !(await slotWasCreated(ctx, idempotencyKey))) {
      out.failedSlots++;
      continue;
    }
    try {
      const created = await createEscrow(ctx, {
        amount: model.amount,
        modelId: model.modelId,
        chainId,
        register: true,
        key,
        keySource: { env: model.privateKeyEnv },
        idempotencyKey,
      });
      const id = BigInt(created.escrow_id);
      if (await escrowTable.tagManualRole(ctx.sql, id, step.role)) {
        await recordEvent(ctx, {
          modelId: model.modelId,
          marker: 'escrow_rotation_created',
          epoch: step.epoch,
          detail: { escrow_id: id.toString(), role: step.role, slot, tx_hash: created.tx_hash },
        });
      }
      out.ids.push(id);
    } catch (err) {
      const message = (err as Error).message;
      out.error = `${step.role} slot ${slot}: ${message}`;
      if (await failedForGood(ctx, idempotencyKey, err)) {
        out.failedSlots++;
        suppressed = true;
        await recordEvent(ctx, {
          modelId: model.modelId,
          marker: 'escrow_rotation_create_failed',
          epoch: step.epoch,
          detail: { role: step.role, slot, error: message },
        });
        if (
          await suppress(ctx.sql, { modelId: model.modelId, role: step.role, epoch: step.epoch }, message)
        ) {
          await recordEvent(ctx, {
            modelId: model.modelId,
            marker: 'escrow_rotation_create_suppressed',
            epoch: step.epoch,
            detail: { role: step.role, error: message },
          });
        }
        // The same cause would fail the remaining slots too: they are suppressed with it.
        continue;
      }
      out.pending = true;
    }
  }
  return out;
}

/** A create whose tx failed on chain, or that its pre-checks refused (it would fail there). */
async function failedForGood(ctx: ControllerContext, idempotencyKey: string, err: unknown): Promise<boolean> {
  if (
    err instanceof GatewayError &&
    (err.code === 'invalid_request' || err.code === 'forbidden' || err.code === 'conflict')
  ) {
    return true;
  }
  const [latest] = await ctx.sql<{ status: string }[]>`
    select status from chain_tx_commitments where business_key = ${createBusinessKey(idempotencyKey)}
     order by created_at desc limit 1`;
  return latest?.status === 'failed';
}

async function slotWasCreated(ctx: ControllerContext, idempotencyKey: string): Promise<boolean> {
  const rows = await ctx.sql`
    select 1 from chain_tx_commitments
     where business_key = ${createBusinessKey(idempotencyKey)} and status = 'included'`;
  return rows.length > 0;
}
