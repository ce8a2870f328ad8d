// GET /v1/debug/rotation (spec §2.8, §3.4): whether rotation is on, where the chain is in its epoch
// (from the public node's /v1/epochs/latest), the rotation settings, and per listed model the latest
// rotation status. The rotation tick is not built yet, so every model reports stage `idle` with zero
// counts; the shape is the one the tick will fill.
import { blocksUntilEpochSwitch, effectiveEpochIndex, queryLatestEpoch } from '@gonka-gateway/chain';
import { GatewayError, openAIErrorSchema } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import type { ControllerContext } from '../controller-context.js';

interface Rotation {
  enabled: boolean;
  pre_poc_blocks: number;
  models: { model_id: string }[];
}

export async function debugRoutes(app: FastifyInstance, options: { ctx: ControllerContext }): Promise<void> {
  const { ctx } = options;
  app.get(
    '/v1/debug/rotation',
    { schema: { response: { 401: openAIErrorSchema, 502: openAIErrorSchema } } },
    async () => {
      const [settings] = await ctx.sql<
        { escrow_rotation: Rotation }[]
      >`select escrow_rotation from settings where id = 1`;
      if (!settings) throw new GatewayError('service_unavailable', 'settings are not bootstrapped yet');
      const rotation = settings.escrow_rotation;
      let chain: Record<string, unknown>;
      try {
        const epoch = await queryLatestEpoch(ctx.chain);
        const toSwitch = blocksUntilEpochSwitch(epoch);
        const preBlocks = BigInt(rotation.pre_poc_blocks);
        chain = {
          block_height: Number(epoch.blockHeight),
          epoch_index: Number(effectiveEpochIndex(epoch)),
          phase: epoch.phase,
          blocks_to_epoch_switch: Number(toSwitch),
          // The bridge stage starts pre_poc_blocks before the switch (spec §2.5).
          blocks_until_next_rotation: Number(toSwitch > preBlocks ? toSwitch - preBlocks : 0n),
        };
      } catch (err) {
        chain = { error: (err as Error).message };
      }
      return {
        enabled: rotation.enabled,
        chain,
        settings: rotation,
        latest: Object.fromEntries(
          rotation.models.map((m) => [
            m.model_id,
            {
              stage: 'idle',
              epoch: null,
              role: null,
              target: 0,
              existing: 0,
              created: 0,
              promoted: 0,
              settled: 0,
              failed: 0,
              last_error: null,
            },
          ]),
        ),
      };
    },
  );
}
