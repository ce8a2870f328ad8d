// The rotation tick (spec §3.4, §8 "about every 15 s"). Each pass reads the
// settings and the chain phase afresh, decides the stage (rotation-plan.ts) and, per listed model:
// - bridge (pre_poc_blocks before the switch): create temp_count temporary escrows, then retire the
//   regular ones — once a temporary escrow is routed by a proxy, so chat never runs out of escrows;
// - target (the chain has left PoC): create target_count regular escrows, then retire the temporary
//   ones, again once a new one is routed;
// - create → routed → retire fit in one tick: after its creates a stage waits (bounded, ROUTED_WAIT_MS
//   per tick) for a proxy to route a replacement, then retires at once, so a bridge window of one
//   tick is enough (the settings refuse a shorter one, admin/settings-routes.ts);
// - fallback: temporary creation failed → regular escrows are promoted to the temporary role (they
//   keep serving through the transition and are retired with the temporaries);
// - suppression: a create that failed on chain (or whose pre-checks say it would: funds, allowlist,
//   amount) is not tried again for the same model, role and epoch.
// Every create goes through escrow/create.ts with an Idempotency-Key per model, role, epoch and slot,
// so its commitment (tx hash stored before broadcast) makes a retried or concurrent tick resume the
// slot's one tx instead of sending a second. Models absent from the chain's governance models are
// skipped before anything is signed. A Redis lock keeps two controllers from ticking at once; the
// stage rows in Postgres make a restarted controller carry on where the last one stopped. Last, the
// settle-window safety pass (retire-by-pass.ts) retires what the stages left past its retire-by
// height, whether rotation is on or not.
import { randomUUID } from 'node:crypto';
import { ChainError, queryGovernanceModels } from '@gonka-gateway/chain';
import { decodePoolState, escrowTable } from '@gonka-gateway/shared';
import type { Sql } from 'postgres';
import type { ControllerContext } from '../controller-context.js';
import { type ChainPhase, publishChainPhase, readChainPhase } from './chain-phase.js';
import { retirePastDue } from './retire-by-pass.js';
import { checkFunding } from './rotation-funding.js';
import { planRotation, type RotationStep } from './rotation-plan.js';
import {
  openStage,
  type RotationRole,
  recordEvent,
  retiringStages,
  type StageRow,
  updateStage,
} from './rotation-record.js';
import { advanceRetiring, type RetireDeps, startRetiring } from './rotation-retire.js';
import {
  type RotationModelSettings,
  type RotationSettings,
  readRotationSettings,
} from './rotation-settings.js';
import { createSlots } from './rotation-slots.js';

export interface RotationTickDeps extends RetireDeps {
  /** How long one tick waits in all for new escrows to be routed (default ROUTED_WAIT_MS). */
  routedWaitMs?: number;
}

/**
 * A proxy claims a registered escrow on its announcement, usually within a few hundred ms
 * (escrow/serving.ts); past this a stage retires on a later tick instead.
 */
export const ROUTED_WAIT_MS = 10_000;
const ROUTED_POLL_MS = 50;

export interface RotationTickResult {
  ran: boolean;
  step?: RotationStep;
  phase?: ChainPhase;
  stages: StageRow[];
}

const LOCK_TTL_MS = 30_000;
const RENEW_IF_HELD = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`;
const RELEASE_IF_HELD = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`;

/** Runs one tick unless another is running (this or another controller); renews its lock meanwhile. */
export async function runRotationTick(
  ctx: ControllerContext,
  deps: RotationTickDeps,
): Promise<RotationTickResult> {
  const key = ctx.keys.rotationTickLock;
  const token = `${ctx.controllerId}-${randomUUID()}`;
  const got = await ctx.redis.set(key, token, 'PX', LOCK_TTL_MS, 'NX');
  if (got !== 'OK') return { ran: false, stages: [] };
  const renew = setInterval(() => {
    ctx.redis.eval(RENEW_IF_HELD, 1, key, token, String(LOCK_TTL_MS)).catch(() => undefined);
  }, LOCK_TTL_MS / 3);
  try {
    return await rotationPass(ctx, deps);
  } finally {
    clearInterval(renew);
    await ctx.redis.eval(RELEASE_IF_HELD, 1, key, token);
  }
}

async function rotationPass(ctx: ControllerContext, deps: RotationTickDeps): Promise<RotationTickResult> {
  const settings = await readRotationSettings(ctx.sql);
  // Stages already under way finish their retirement even when rotation was switched off since.
  const models = new Map((settings?.models ?? []).map((m) => [m.modelId, m]));
  const stages: StageRow[] = [];
  for (const row of await retiringStages(ctx.sql)) {
    try {
      stages.push(await advanceRetiring(ctx, deps, row, models.get(row.modelId)));
    } catch (err) {
      await reportModelError(ctx, row.modelId, row.epoch, err);
    }
  }
  const result: RotationTickResult =
    settings?.enabled && settings.models.length > 0
      ? await runStages(ctx, deps, settings, stages)
      : { ran: true, stages };
  await safetyPass(ctx, deps, result.phase, models);
  return result;
}

/** The settle-window safety pass; its trouble is logged, never the tick's failure (the stages ran). */
async function safetyPass(
  ctx: ControllerContext,
  deps: RotationTickDeps,
  phase: ChainPhase | undefined,
  models: ReadonlyMap<string, RotationModelSettings>,
): Promise<void> {
  try {
    await retirePastDue(ctx, deps, phase ?? (await readChainPhase(ctx)), models);
  } catch (err) {
    // The node unreachable is the chain-phase job's to report (node_unreachable); anything else here.
    const level = err instanceof ChainError ? 'debug' : 'warn';
    ctx.logger[level]({ err: (err as Error).message }, 'settle-window safety pass failed: retried next tick');
  }
}

async function runStages(
  ctx: ControllerContext,
  deps: RotationTickDeps,
  settings: RotationSettings,
  stages: StageRow[],
): Promise<RotationTickResult> {
  const phase = await publishChainPhase(ctx);
  const step = planRotation(phase, settings.prePocBlocks);
  const governance = new Set((await queryGovernanceModels(ctx.chain)).map((m) => m.id));
  const rotated: RotationModelSettings[] = [];
  for (const model of settings.models) {
    if (governance.has(model.modelId)) {
      rotated.push(model);
      continue;
    }
    await recordEvent(
      ctx,
      {
        modelId: model.modelId,
        marker: 'escrow_rotation_model_absent',
        epoch: phase.epoch,
        detail: {},
      },
      { once: true, message: 'rotation skips a model that is not a governance model on the chain' },
    );
  }
  await warnIfUnderfunded(ctx, rotated, phase.epoch);
  if (step.stage === 'hold') return { ran: true, step, phase, stages };
  const routedBy = performance.now() + (deps.routedWaitMs ?? ROUTED_WAIT_MS);
  for (const model of rotated) {
    try {
      stages.push(await runStage(ctx, deps, model, step, routedBy));
    } catch (err) {
      await reportModelError(ctx, model.modelId, step.epoch, err);
    }
  }
  return { ran: true, step, phase, stages };
}

/**
 * One model's trouble (chain unreachable, …) must not stop the others; the next tick retries.
 * Recorded once per epoch and cause for /v1/debug/rotation (if Postgres itself is the trouble, the
 * log line is all there is).
 */
async function reportModelError(ctx: ControllerContext, modelId: string, epoch: bigint, err: unknown) {
  const error = (err as Error).message;
  await recordEvent(
    ctx,
    { modelId, marker: 'escrow_rotation_tick_error', epoch, detail: { error } },
    { once: true, message: 'rotation tick: model skipped this time' },
  ).catch(() =>
    ctx.logger.warn(
      { marker: 'escrow_rotation_tick_error', model: modelId, err: error },
      'rotation tick failed',
    ),
  );
}

async function warnIfUnderfunded(
  ctx: ControllerContext,
  models: readonly RotationModelSettings[],
  epoch: bigint,
): Promise<void> {
  let funding: Awaited<ReturnType<typeof checkFunding>>;
  try {
    funding = await checkFunding(ctx, models);
  } catch (err) {
    ctx.logger.warn({ err: (err as Error).message }, 'rotation funding check could not run');
    return;
  }
  for (const f of funding) {
    if (f.ok) continue;
    for (const modelId of f.models) {
      await recordEvent(
        ctx,
        {
          modelId,
          marker: 'escrow_rotation_underfunded',
          epoch,
          detail: { creator: f.creator, spendable: f.spendable.toString(), required: f.required.toString() },
        },
        {
          once: true,
          message: 'rotation creator balance is below (temp_count + target_count) × amount plus gas',
        },
      );
    }
  }
}

async function runStage(
  ctx: ControllerContext,
  deps: RotationTickDeps,
  model: RotationModelSettings,
  step: Extract<RotationStep, { role: RotationRole }>,
  routedBy: number,
): Promise<StageRow> {
  const target = step.stage === 'bridge' ? model.tempCount : model.targetCount;
  const { row: opened, opened: isNew } = await openStage(ctx.sql, {
    modelId: model.modelId,
    epoch: step.epoch,
    stage: step.stage,
    role: step.role,
    target,
  });
  if (isNew) {
    await recordEvent(ctx, {
      modelId: model.modelId,
      marker: `escrow_rotation_${step.stage}_started`,
      epoch: step.epoch,
      detail: { target },
    });
  }
  let row = opened;
  if (row.status !== 'creating') return row;

  const created = await createSlots(ctx, model, step, row.target);
  row = await updateStage(ctx.sql, row, {
    created: created.ids.length,
    failed: created.failedSlots,
    lastError: created.error ?? row.lastError,
    existing: await servingCount(ctx, model.modelId, step.role),
  });
  if (created.pending) return row; // an outcome is not known yet: the next tick resumes the slot

  if (step.stage === 'bridge' && created.ids.length + row.promoted < row.target) {
    const missing = row.target - created.ids.length - row.promoted;
    // Role change and count in one transaction: a crash between them must not promote twice.
    const before = row;
    const promoted = await ctx.sql.begin(async (tx) => {
      const ids = await promoteToTemp(tx as unknown as Sql, model.modelId, missing, step.epoch - 1n);
      if (ids.length > 0)
        await updateStage(tx as unknown as Sql, before, { promoted: before.promoted + ids.length });
      return ids;
    });
    if (promoted.length > 0) {
      row = { ...row, promoted: row.promoted + promoted.length };
      await recordEvent(ctx, {
        modelId: model.modelId,
        marker: 'escrow_rotation_fallback_promoted',
        epoch: step.epoch,
        detail: { escrow_ids: promoted.join(','), missing },
      });
    }
  }
  if (step.stage === 'bridge') row = await retireExpiring(ctx, model.modelId, step.epoch, row);
  // What keeps serving once the outgoing role is retired: every routed temporary escrow (created or
  // promoted) in the bridge, this stage's new regular escrows in the target stage.
  const replacements = step.stage === 'bridge' ? await roleEscrows(ctx, model.modelId, 'temp') : created.ids;
  if (row.target > 0 && !(await routedWithin(ctx, replacements, routedBy))) {
    if (replacements.length === 0) {
      await recordEvent(
        ctx,
        {
          modelId: model.modelId,
          marker: 'escrow_rotation_no_replacement',
          epoch: step.epoch,
          detail: { stage: step.stage },
        },
        { once: true, message: 'rotation keeps the current escrows: no replacement could be created' },
      );
      return updateStage(ctx.sql, row, { status: 'done' });
    }
    return row; // retire once a proxy routes a replacement, so chat never runs dry
  }
  // Routed: retire now. Every proxy re-reads its pool snapshot at once on the announcement of an
  // escrow it cannot route to yet (apps/proxy ownership/pool-snapshot.ts), and the outgoing
  // escrows' drain is announced after the replacement was published, so a snapshot that shows them
  // draining shows the replacement too.
  if (row.target > 0 && row.replacementRoutedAt === null) {
    row = await updateStage(ctx.sql, row, { replacementRoutedAt: new Date() });
  }
  const outgoing = step.stage === 'bridge' ? 'regular' : 'temp';
  const outgoingIds = await startRetiring(
    ctx,
    await untrackedElsewhere(ctx, row, await roleEscrows(ctx, model.modelId, outgoing, true)),
  );
  const retiring = union(row.retiring, outgoingIds);
  await recordEvent(ctx, {
    modelId: model.modelId,
    marker: 'escrow_rotation_retiring',
    epoch: step.epoch,
    detail: { stage: step.stage, role: outgoing, escrow_ids: outgoingIds.join(',') },
  });
  row = await updateStage(ctx.sql, row, {
    status: 'retiring',
    retiring,
    existing: await servingCount(ctx, model.modelId, step.role),
  });
  return advanceRetiring(ctx, deps, row, model);
}

const union = (a: readonly bigint[], b: readonly bigint[]) => [
  ...new Map([...a, ...b].map((id) => [id.toString(), id])).values(),
];

/**
 * Settle window (chain-and-network.md §2.6 rule 9: an escrow settles in its own epoch or the next):
 * at the bridge into `epoch`, every rotated escrow created before the epoch now in force must be
 * retired now, whatever its role and whether a replacement is routed — e.g. temporaries kept
 * because the last target stage could not create anything. Money before availability. The
 * retire-by pass (retire-by-pass.ts) usually retires them earlier; this one needs no block time.
 */
async function retireExpiring(
  ctx: ControllerContext,
  modelId: string,
  epoch: bigint,
  row: StageRow,
): Promise<StageRow> {
  const expiring = await escrowTable.listRotatedBefore(ctx.sql, modelId, epoch - 1n);
  if (expiring.length === 0) return row;
  const ids = await startRetiring(ctx, expiring);
  await recordEvent(ctx, {
    modelId,
    marker: 'escrow_rotation_window_retire',
    epoch,
    detail: { escrow_ids: ids.join(',') },
  });
  return updateStage(ctx.sql, row, { retiring: union(row.retiring, ids) });
}

/**
 * Fallback (spec §3.4): up to `count` routed regular escrows created in `minEpoch` or later (older
 * ones must settle now, retireExpiring) take the temporary role.
 */
async function promoteToTemp(sql: Sql, modelId: string, count: number, minEpoch: bigint): Promise<bigint[]> {
  if (count <= 0) return [];
  return escrowTable.promoteRegularToTemp(sql, modelId, count, minEpoch);
}

/**
 * The escrows of `ids` that no other stage is retiring. An escrow whose settle outlasts an epoch is
 * still on its own stage's list when the next stage of the same role starts (seen on a loaded
 * machine with 12 s epochs); taken onto this one too, both stages would count it settled in
 * /v1/debug/rotation. Escrows that left `active` without a stage (the operator drained them, or a
 * controller died between marking and recording them) are still picked up here.
 */
async function untrackedElsewhere(
  ctx: ControllerContext,
  row: StageRow,
  ids: readonly bigint[],
): Promise<bigint[]> {
  const tracked = new Set<bigint>();
  for (const other of await retiringStages(ctx.sql)) {
    const same = other.modelId === row.modelId && other.epoch === row.epoch && other.stage === row.stage;
    if (!same) for (const id of other.retiring) tracked.add(id);
  }
  return ids.filter((id) => !tracked.has(id));
}

/**
 * Escrows of a role for a model that are not settled: routed ones only, or (`withRetiring`) also
 * those already past `active` (a previous stage or the operator started retiring them).
 */
async function roleEscrows(
  ctx: ControllerContext,
  modelId: string,
  role: RotationRole,
  withRetiring = false,
): Promise<bigint[]> {
  return escrowTable.listByRole(ctx.sql, modelId, role, withRetiring);
}

async function servingCount(ctx: ControllerContext, modelId: string, role: RotationRole): Promise<number> {
  return (await roleEscrows(ctx, modelId, role)).length;
}

/** anyRouted, asked again until `deadline` (performance.now()) while `ids` has an escrow to wait for. */
async function routedWithin(
  ctx: ControllerContext,
  ids: readonly bigint[],
  deadline: number,
): Promise<boolean> {
  for (;;) {
    if (await anyRouted(ctx, ids)) return true;
    const left = deadline - performance.now();
    if (ids.length === 0 || left <= 0) return false;
    await new Promise((r) => setTimeout(r, Math.min(ROUTED_POLL_MS, left)));
  }
}

/** Some escrow of `ids` is owned by a proxy and routed (its pool entry says `active`). */
async function anyRouted(ctx: ControllerContext, ids: readonly bigint[]): Promise<boolean> {
  for (const id of ids) {
    try {
      const pool = decodePoolState(await ctx.redis.hgetall(ctx.keys.poolEscrow(id)));
      if (pool && pool.status === 'active' && pool.owner) return true;
    } catch {
      // a malformed entry does not count as routed
    }
  }
  return false;
}
