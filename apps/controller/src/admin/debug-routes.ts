// GET /v1/debug/rotation (spec §2.8, §3.4): whether rotation is on, where the chain is in its epoch
// (from the public node's /v1/epochs/latest, chain-phase.ts), the rotation settings, the funding of
// each creator (spec §3.4 funding rule), and per listed model the latest rotation stage as the tick
// recorded it in Postgres (rotation_stages), with its suppressed creates and its recent markers
// (`escrow_rotation_*`, `escrow_depletion_replacement_failed`). A model the tick has not handled yet
// reports stage `idle`. `settle_window`: every unsettled escrow's window close and retire-by height
// (upkeep/retire-by.ts) and the escrows whose window closed unsettled, with their amounts.
import { GatewayError, openAIErrorSchema } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import type {
  CreatorFunding,
  ModelRotationStage,
  RotationChainPosition,
  RotationReport,
  SettleWindowReport,
} from '../admin-api.js';
import type { ControllerContext } from '../controller-context.js';
import { readChainPhase } from '../upkeep/chain-phase.js';
import { pastRetireBy, readSettleWindows, type SettleWindows } from '../upkeep/retire-by.js';
import { checkFunding } from '../upkeep/rotation-funding.js';
import { blocksUntilBridge, planRotation } from '../upkeep/rotation-plan.js';
import { latestStages, recentEvents, suppressions } from '../upkeep/rotation-record.js';
import { readStoredRotation, rotationSettingsOf } from '../upkeep/rotation-settings.js';

export async function debugRoutes(app: FastifyInstance, options: { ctx: ControllerContext }): Promise<void> {
  const { ctx } = options;
  app.get(
    '/v1/debug/rotation',
    { schema: { response: { 401: openAIErrorSchema, 502: openAIErrorSchema } } },
    async (): Promise<RotationReport> => {
      const stored = await readStoredRotation(ctx.sql);
      if (!stored) throw new GatewayError('service_unavailable', 'settings are not bootstrapped yet');
      const settings = rotationSettingsOf(stored);
      let chain: RotationChainPosition | { error: string };
      let settleWindow: SettleWindowReport | { error: string };
      try {
        const p = await readChainPhase(ctx);
        settleWindow = settleWindowView(await readSettleWindows(ctx, p), p.blockHeight);
        const step = planRotation(p, settings.prePocBlocks);
        chain = {
          block_height: Number(p.blockHeight),
          epoch_index: Number(p.epoch),
          latest_epoch_index: Number(p.latestEpoch),
          phase: p.phase,
          poc_active: p.pocActive,
          blocks_to_epoch_switch: Number(p.blocksToSwitch),
          // The bridge stage starts pre_poc_blocks before the switch (spec §2.5).
          blocks_until_next_rotation: Number(blocksUntilBridge(p, settings.prePocBlocks)),
          planned_stage: step.stage,
        };
      } catch (err) {
        chain = { error: (err as Error).message };
        settleWindow = { error: (err as Error).message };
      }
      let funding: CreatorFunding[] | { error: string };
      try {
        funding = (await checkFunding(ctx, settings.enabled ? settings.models : [])).map((f) => ({
          creator: f.creator,
          private_key_env: f.privateKeyEnv,
          models: f.models,
          spendable: f.spendable.toString(),
          required: f.required.toString(),
          ok: f.ok,
        }));
      } catch (err) {
        funding = { error: (err as Error).message };
      }
      const [latest, suppressed] = await Promise.all([latestStages(ctx.sql), suppressions(ctx.sql)]);
      const perModel = await Promise.all(
        stored.models.map(async (m) => {
          const row = latest.get(m.model_id);
          const events = await recentEvents(ctx.sql, m.model_id);
          const stage: ModelRotationStage = {
            stage: row?.stage ?? 'idle',
            status: row?.status ?? null,
            epoch: row ? Number(row.epoch) : null,
            role: row?.role ?? null,
            target: row?.target ?? 0,
            existing: row?.existing ?? 0,
            created: row?.created ?? 0,
            promoted: row?.promoted ?? 0,
            settled: row?.settled ?? 0,
            failed: row?.failed ?? 0,
            retiring: row?.retiring.map(Number) ?? [],
            last_error: row?.lastError ?? null,
            updated_at: row?.updatedAt.toISOString() ?? null,
            suppressed: suppressed
              .filter((s) => s.modelId === m.model_id)
              .map((s) => ({
                role: s.role,
                epoch: Number(s.epoch),
                error: s.error,
                at: s.at.toISOString(),
              })),
            events: events.map((e) => ({
              marker: e.marker,
              epoch: e.epoch === null ? null : Number(e.epoch),
              at: e.at.toISOString(),
              ...e.detail,
            })),
          };
          return [m.model_id, stage] as const;
        }),
      );
      return {
        enabled: settings.enabled,
        chain,
        settings: stored,
        funding,
        settle_window: settleWindow,
        latest: Object.fromEntries(perModel),
      };
    },
  );
}

/** Every unsettled escrow's window and retire-by height, and those whose window closed unsettled. */
function settleWindowView(w: SettleWindows, height: bigint): SettleWindowReport {
  const closed = w.escrows.filter((e) => e.closesAt === null);
  return {
    block_time_ms: w.blockTime ? Math.round(w.blockTime.msPerBlock * 10) / 10 : null,
    block_time_over_blocks: w.blockTime?.overBlocks ?? null,
    tick_ms: w.timing.tickMs,
    margin_ms: w.timing.marginMs,
    epoch_length: Number(w.epochLength),
    escrows: w.escrows.map((e) => ({
      escrow_id: Number(e.escrowId),
      model_id: e.modelId,
      role: e.role,
      state: e.state,
      epoch: Number(e.epoch),
      amount: e.amount.toString(),
      execution_timeout_s: Number(e.executionTimeoutS),
      window_closes_at: e.closesAt === null ? null : Number(e.closesAt),
      retire_by_height: e.retireBy ? Number(e.retireBy.height) : null,
      reserve_blocks: e.retireBy ? Number(e.retireBy.reserveBlocks) : null,
      reserve_capped: e.retireBy?.capped ?? null,
      past_retire_by: pastRetireBy(e, height),
    })),
    closed_unsettled: closed.map((e) => ({
      escrow_id: Number(e.escrowId),
      model_id: e.modelId,
      epoch: Number(e.epoch),
      state: e.state,
      amount: e.amount.toString(),
    })),
    closed_unsettled_amount: closed.reduce((sum, e) => sum + e.amount, 0n).toString(),
  };
}
