// The controller's BullMQ queues, workers and schedules. Queues exist in every controller (the
// admin routes enqueue); workers and schedules only where `workers` is on. Each worker gets its own
// Redis connection (a worker blocks on it); everything shares the configured key prefix.
import { closeRedis, openRedis } from '@gonka-gateway/shared';
import { type Job, Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { ControllerContext } from '../controller-context.js';
import { settleEscrow } from '../escrow/settle.js';
import { publishChainPhase } from '../upkeep/chain-phase.js';
import { checkDepletion } from '../upkeep/depletion-check.js';
import { runRotationTick } from '../upkeep/rotation-tick.js';
import {
  DEFAULT_JOB_OPTIONS,
  DEPLETION_CHECK_EVERY_MS,
  JOB_IDS,
  QUEUE_NAMES,
  RECONCILE_EVERY_MS,
  ROTATION_TICK_EVERY_MS,
} from './queues.js';
import { reconcileOpenCommitments } from './reconcile-commitments.js';

export interface SettleJobData {
  escrowId: string;
  privateKeyEnv: string;
}

export interface ControllerJobs {
  reconcile: Queue;
  settle: Queue<SettleJobData>;
  /** Enqueues the settle job of an escrow once (a failed one is retried); returns its id. */
  enqueueSettle(escrowId: bigint, privateKeyEnv: string): Promise<string>;
  /**
   * Why the escrow's settle job failed for good (an UnrecoverableError: wrong key, window closed,
   * refused tx), or undefined while it may still succeed.
   */
  settleGaveUp(escrowId: bigint): Promise<string | undefined>;
  /** One rotation tick now (after a settings change of this revision). */
  kickRotation(revision: string): Promise<void>;
  close(): Promise<void>;
}

export async function startControllerJobs(
  ctx: ControllerContext,
  options: { redisUrl: string; workers: boolean; rotationTickMs?: number },
): Promise<ControllerJobs> {
  const connections: Redis[] = [];
  const connection = () => {
    const c = openRedis(options.redisUrl, { name: 'controller-bullmq' });
    connections.push(c);
    return c;
  };
  const prefix = ctx.keys.bullPrefix;
  const queueOptions = { connection: connection(), prefix, defaultJobOptions: DEFAULT_JOB_OPTIONS };
  const reconcile = new Queue(QUEUE_NAMES.reconcileCommitments, queueOptions);
  const settle = new Queue<SettleJobData>(QUEUE_NAMES.settle, queueOptions);
  const depletion = new Queue(QUEUE_NAMES.depletionCheck, queueOptions);
  const rotation = new Queue(QUEUE_NAMES.rotationTick, queueOptions);
  const chainPhase = new Queue(QUEUE_NAMES.chainPhase, queueOptions);
  const rotationTickMs = options.rotationTickMs ?? ROTATION_TICK_EVERY_MS;
  const enqueueSettle = async (escrowId: bigint, privateKeyEnv: string): Promise<string> => {
    const jobId = JOB_IDS.settle(escrowId);
    const existing = await settle.getJob(jobId);
    if (existing) {
      const state = await existing.getState();
      // Waiting or running: the same settle is under way, never a second one.
      if (state !== 'failed' && state !== 'completed') return jobId;
      // A finished run is replaced by a fresh one with this request's key name; the job itself
      // is idempotent (a settled escrow is done, a committed tx is reconciled before anything).
      await existing.remove();
    }
    await settle.add('settle', { escrowId: escrowId.toString(), privateKeyEnv }, { jobId });
    return jobId;
  };
  const settleGaveUp = async (escrowId: bigint): Promise<string | undefined> => {
    const job = await settle.getJob(JOB_IDS.settle(escrowId));
    if (!job || (await job.getState()) !== 'failed') return undefined;
    // Failed before using its attempts: BullMQ's UnrecoverableError (settle.ts rule violations).
    return job.attemptsMade < (job.opts.attempts ?? 1) ? (job.failedReason ?? 'settle failed') : undefined;
  };
  const workers: Worker[] = [];
  if (options.workers) {
    workers.push(
      new Worker(
        QUEUE_NAMES.reconcileCommitments,
        async (job: Job<{ txHash?: string }>) => reconcileOpenCommitments(ctx, job.data.txHash),
        { connection: connection(), prefix, concurrency: 1 },
      ),
      new Worker(
        QUEUE_NAMES.settle,
        async (job: Job<SettleJobData>) =>
          settleEscrow(ctx, BigInt(job.data.escrowId), job.data.privateKeyEnv),
        { connection: connection(), prefix, concurrency: 2 },
      ),
    );
    workers.push(
      new Worker(
        QUEUE_NAMES.depletionCheck,
        async () => {
          const findings = await checkDepletion(ctx, { enqueueSettle });
          return findings.map((f) => ({ ...f, escrowId: f.escrowId.toString() }));
        },
        { connection: connection(), prefix, concurrency: 1 },
      ),
    );
    workers.push(
      new Worker(
        QUEUE_NAMES.rotationTick,
        async () => {
          const tick = await runRotationTick(ctx, { enqueueSettle, settleGaveUp });
          return { ran: tick.ran, step: tick.step?.stage ?? null, stages: tick.stages.length };
        },
        // A tick never overlaps another (it also holds a Redis lock across controllers).
        { connection: connection(), prefix, concurrency: 1 },
      ),
      new Worker(
        QUEUE_NAMES.chainPhase,
        async () => {
          const p = await publishChainPhase(ctx);
          return { epoch: p.epoch.toString(), phase: p.phase, pocActive: p.pocActive };
        },
        { connection: connection(), prefix, concurrency: 1 },
      ),
    );
    for (const w of workers) {
      w.on('failed', (job, err) =>
        ctx.logger.warn({ queue: w.name, jobId: job?.id, err: err.message }, 'job failed'),
      );
    }
    await reconcile.upsertJobScheduler(
      JOB_IDS.reconcileSchedule,
      { every: RECONCILE_EVERY_MS },
      { data: {} },
    );
    await depletion.upsertJobScheduler(
      JOB_IDS.depletionSchedule,
      { every: DEPLETION_CHECK_EVERY_MS },
      { data: {} },
    );
    // A failed tick or phase poll is not retried: the next one comes within seconds.
    const once = {
      data: {},
      opts: { attempts: 1, removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } },
    };
    await rotation.upsertJobScheduler(JOB_IDS.rotationSchedule, { every: rotationTickMs }, once);
    await chainPhase.upsertJobScheduler(
      JOB_IDS.chainPhaseSchedule,
      { every: Math.max(1_000, Math.floor(rotationTickMs / 3)) },
      once,
    );
  }
  return {
    reconcile,
    settle,
    enqueueSettle,
    settleGaveUp,
    async kickRotation(revision) {
      await rotation.add('rotation-tick', {}, { jobId: JOB_IDS.rotationKick(revision), attempts: 1 });
    },
    async close() {
      await Promise.all(workers.map((w) => w.close()));
      await Promise.all([
        reconcile.close(),
        settle.close(),
        depletion.close(),
        rotation.close(),
        chainPhase.close(),
      ]);
      await Promise.all(connections.map(closeRedis));
    },
  };
}
