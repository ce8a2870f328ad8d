// The balance check (spec §3.1 "periodic balance check", §8): about every 30 s each routed
// escrow's pool entry (balance estimate and nonce, published by its owner) is compared with the
// depletion threshold (usable balance below 1,000,000 ngonka) and the routing stop of the nonce
// (max_nonce − (N + 1) − 200 as the owner publishes it; nonce-limit.ts). A hit marks the pool
// entry `depleted` / `nonce_limited`, so proxies stop routing new chat to it, and logs the marker.
// With rotation on and the model listed in escrow_rotation.models, exactly one replacement is
// created — the create's Idempotency-Key is derived from the old escrow's id, so a second check, a
// retry or a second controller resumes the same create instead of making another — and the old
// escrow is finalized and settled (settle job).
// A low balance that in-flight reservations may bring back is held instead (escrow-hold.ts): not
// routed, replaced or settled until they resolve; then released, or retired as depleted. So is an
// escrow at the routing stop of a max_nonce its owner has not read yet (nonce-limit.ts).
import { privateKeyFromEnv, queryChainId } from '@gonka-gateway/chain';
import { DEPLETION_THRESHOLD, decodePoolState, escrowTable, type PoolStatus } from '@gonka-gateway/shared';
import type { ControllerContext } from '../controller-context.js';
import { createEscrow } from '../escrow/create.js';
import { publishPoolStatus } from '../escrow/pool-status.js';
import { holdOrRelease } from './escrow-hold.js';
import { atUnknownCeiling, holdAtUnknownCeiling, routingStopOf } from './nonce-limit.js';
import { recordEvent } from './rotation-record.js';

export { DEPLETION_THRESHOLD };

interface RotationModel {
  model_id: string;
  amount: string;
  private_key_env: string;
}

export interface DepletionFinding {
  escrowId: bigint;
  /** `released`: a hold ended with the balance above the minimum (back to `active`). */
  status: Extract<PoolStatus, 'depleted' | 'nonce_limited' | 'held'> | 'released';
  replacement?: number;
}

export interface DepletionDeps {
  /** Enqueues finalize + settle of the old escrow (the settle job). */
  enqueueSettle(escrowId: bigint, privateKeyEnv: string): Promise<string>;
}

export const replacementKey = (escrowId: bigint) => `depletion-replacement-${escrowId}`;

export async function checkDepletion(
  ctx: ControllerContext,
  deps: DepletionDeps,
): Promise<DepletionFinding[]> {
  const escrows = await escrowTable.listServing(ctx.sql);
  const [settings] = await ctx.sql<{ escrow_rotation: { enabled: boolean; models: RotationModel[] } }[]>`
    select escrow_rotation from settings where id = 1`;
  const rotation = settings?.escrow_rotation;
  const findings: DepletionFinding[] = [];
  for (const e of escrows) {
    const escrowId = e.escrowId;
    let pool: ReturnType<typeof decodePoolState>;
    try {
      pool = decodePoolState(await ctx.redis.hgetall(ctx.keys.poolEscrow(escrowId)));
    } catch {
      continue; // a malformed entry is its owner's to rewrite
    }
    if (!pool) continue; // unowned: nothing routes to it, its owner publishes the numbers on claim
    const status =
      pool.balanceEstimate < DEPLETION_THRESHOLD
        ? 'depleted'
        : pool.nonce >= routingStopOf(pool)
          ? 'nonce_limited'
          : null;
    if (status === 'nonce_limited' && atUnknownCeiling(pool)) {
      // Never retired for a ceiling nobody read (nonce-limit.ts): held, or left as it is.
      const held = await holdAtUnknownCeiling(ctx, pool);
      if (held) findings.push(held);
      continue;
    }
    const hold = await holdOrRelease(ctx, pool, status);
    if (hold) {
      findings.push(hold);
      continue;
    }
    if (!status) continue;
    if (pool.status !== status) {
      await publishPoolStatus(ctx, escrowId, status);
      ctx.logger.warn(
        {
          marker: 'escrow_depleted',
          escrowId: escrowId.toString(),
          status,
          balance: pool.balanceEstimate.toString(),
          nonce: pool.nonce.toString(),
        },
        'escrow out of routing: depleted or at the nonce routing stop',
      );
    }
    const finding: DepletionFinding = { escrowId, status };
    const model = rotation?.enabled ? rotation.models.find((m) => m.model_id === e.modelId) : undefined;
    if (model) {
      try {
        const key = privateKeyFromEnv(ctx.env, model.private_key_env);
        const created = await createEscrow(ctx, {
          amount: BigInt(model.amount),
          modelId: model.model_id,
          chainId: await queryChainId(ctx.chain),
          register: true,
          key,
          keySource: { env: model.private_key_env },
          idempotencyKey: replacementKey(escrowId),
        });
        finding.replacement = created.escrow_id;
        // A rotated escrow's replacement takes its role, so the rotation retires it in turn.
        await escrowTable.tagManualRole(ctx.sql, BigInt(created.escrow_id), e.role);
        await deps.enqueueSettle(escrowId, model.private_key_env);
      } catch (err) {
        // Logged and kept for /v1/debug/rotation (spec §3.4 markers); once per old escrow and cause.
        await recordEvent(
          ctx,
          {
            modelId: model.model_id,
            marker: 'escrow_depletion_replacement_failed',
            epoch: null,
            detail: { escrow_id: escrowId.toString(), error: (err as Error).message },
          },
          { once: true, message: 'depletion replacement failed' },
        );
      }
    }
    findings.push(finding);
  }
  return findings;
}
