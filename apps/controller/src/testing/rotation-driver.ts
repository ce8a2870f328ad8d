// Drives the rotation tick by hand on a controller harness: the chain moved to a stage's window, the
// settle job run inline, and the pool entry an owning proxy would publish for an escrow it routes.
import { GNK, QWEN_MODEL } from '@gonka-gateway/devnet';
import { redisKeys } from '@gonka-gateway/shared';
import type { ControllerContext } from '../controller-context.js';
import { settleEscrow } from '../escrow/settle.js';
import { runRotationTick } from '../upkeep/rotation-tick.js';
import type { ControllerHarness } from './controller-harness.js';

/** An `escrow_rotation` body of POST /v1/admin/settings: one temporary and one target escrow a model. */
export function rotationSettings(
  prePocBlocks: number,
  models: readonly { modelId: string; privateKeyEnv: string; amount?: bigint }[],
) {
  return {
    escrow_rotation: {
      enabled: true,
      pre_poc_blocks: prePocBlocks,
      models: models.map((m) => ({
        model_id: m.modelId,
        temp_count: 1,
        target_count: 1,
        amount: (m.amount ?? 5n * GNK).toString(),
        private_key_env: m.privateKeyEnv,
      })),
    },
  };
}

export interface RotationDriver {
  /** Escrows the inline settle job settled, in order. */
  readonly settled: bigint[];
  readonly deps: Parameters<typeof runRotationTick>[1];
  tick(): ReturnType<typeof runRotationTick>;
  /** The pool entry an owning proxy publishes for an escrow it serves. */
  publishRouted(id: bigint): Promise<unknown>;
  /** publishRouted, then a tick: it sees the escrow routed and retires the outgoing ones at once. */
  route(id: bigint): Promise<void>;
  /** Moves the chain to `blocksBefore` blocks before the switch into `epoch` (past it when negative). */
  moveTo(epoch: number, blocksBefore: number): void;
  epochNow(): number;
}

export function rotationDriver(
  h: ControllerHarness,
  options: {
    epochLength: number;
    amount?: bigint;
    /** The context the tick runs with (default h.context()): e.g. with metrics or settle timing. */
    context?: ControllerContext;
  },
): RotationDriver {
  const ctx = options.context ?? h.context();
  const keys = redisKeys(h.redis.prefix);
  const settled: bigint[] = [];
  const deps = {
    // The settle job, run inline (jobs/workers.ts runs settleEscrow the same way).
    enqueueSettle: async (id: bigint, env: string) => {
      await settleEscrow(ctx, id, env);
      settled.push(id);
      return `settle-${id}`;
    },
    // No proxy claims anything here: a tick looks once; publishRouted stands in for the claim.
    routedWaitMs: 0,
  };
  const tick = () => runRotationTick(ctx, deps);
  const publishRouted = (id: bigint) =>
    h.redis.redis.hset(keys.poolEscrow(id), {
      escrow_id: id.toString(),
      model_id: QWEN_MODEL,
      status: 'active',
      capacity_weight: '1',
      balance_estimate: (options.amount ?? 5n * GNK).toString(),
      nonce: '0',
      owner: 'replica-a',
      updated_at_ms: String(Date.now()),
    });
  return {
    settled,
    deps,
    tick,
    publishRouted,
    route: async (id) => {
      await publishRouted(id);
      await tick();
    },
    moveTo: (epoch, blocksBefore) => {
      // PoC takes the 20 blocks before set_new_validators (= poc_start + 20).
      const height = epoch * options.epochLength + 20 - blocksBefore;
      const now = Number(h.devnet.blocks.height);
      if (height > now) h.devnet.blocks.step(height - now);
    },
    epochNow: () => Number(h.devnet.epochs.current().effective),
  };
}
