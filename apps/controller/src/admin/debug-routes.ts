// GET /v1/debug/rotation (spec §2.8, §3.4): whether rotation is on, where the chain is in its epoch
// (from the public node's /v1/epochs/latest, chain-phase.ts), the rotation settings, the funding of
// each creator (spec §3.4 funding rule), and per listed model the latest rotation stage as the tick
// recorded it in Postgres (rotation_stages), with its suppressed creates and its recent markers
// (`escrow_rotation_*`, `escrow_depletion_replacement_failed`). A model the tick has not handled yet
// reports stage `idle`.
import { GatewayError, openAIErrorSchema } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import type { ControllerContext } from '../controller-context.js';
import { readChainPhase } from '../upkeep/chain-phase.js';
import { checkFunding } from '../upkeep/rotation-funding.js';
import { blocksUntilBridge, planRotation } from '../upkeep/rotation-plan.js';
import { latestStages, recentEvents, suppressions } from '../upkeep/rotation-record.js';
import { readStoredRotation, rotationSettingsOf } from '../upkeep/rotation-settings.js';

export async function debugRoutes(app: FastifyInstance, options: { ctx: ControllerContext }): Promise<void> {
  const { ctx } = options;
  app.get(
    '/v1/debug/rotation',
    { schema: { response: { 401: openAIErrorSchema, 502: openAIErrorSchema } } },
    async () => {
      const stored = await readStoredRotation(ctx.sql);
      if (!stored) throw new GatewayError('service_unavailable', 'settings are not bootstrapped yet');
      const settings = rotationSettingsOf(stored);
      let chain: Record<string, unknown>;
      try {
        const p = await readChainPhase(ctx);
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
      }
      let funding: unknown[] | { error: string };
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
          return [
            m.model_id,
            {
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
            },
          ] as const;
        }),
      );
      return {
        enabled: settings.enabled,
        chain,
        settings: stored,
        funding,
        latest: Object.fromEntries(perModel),
      };
    },
  );
}
