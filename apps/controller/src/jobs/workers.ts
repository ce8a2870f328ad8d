// The controller's BullMQ workers and schedules. Each worker gets its own Redis connection (a
// worker blocks on it); queues and workers share the configured prefix.
import { closeRedis, openRedis } from '@gonka-gateway/shared';
import { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { ControllerContext } from '../controller-context.js';
import { DEFAULT_JOB_OPTIONS, JOB_IDS, QUEUE_NAMES, RECONCILE_EVERY_MS } from './queues.js';
import { reconcileOpenCommitments } from './reconcile-commitments.js';

export interface ControllerJobs {
  reconcile: Queue;
  /** Enqueues a reconciliation of one tx (idempotent: one job per hash). */
  reconcileTx(txHash: string): Promise<void>;
  close(): Promise<void>;
}

export async function startControllerJobs(
  ctx: ControllerContext,
  options: { redisUrl: string; schedule?: boolean },
): Promise<ControllerJobs> {
  const connections: Redis[] = [];
  const connection = () => {
    const c = openRedis(options.redisUrl, { name: 'controller-bullmq' });
    connections.push(c);
    return c;
  };
  const prefix = ctx.keys.bullPrefix;
  const reconcile = new Queue(QUEUE_NAMES.reconcileCommitments, {
    connection: connection(),
    prefix,
    defaultJobOptions: DEFAULT_JOB_OPTIONS,
  });
  const worker = new Worker(
    QUEUE_NAMES.reconcileCommitments,
    async (job) => reconcileOpenCommitments(ctx, (job.data as { txHash?: string }).txHash),
    { connection: connection(), prefix, concurrency: 1 },
  );
  worker.on('failed', (job, err) => ctx.logger.warn({ jobId: job?.id, err }, 'reconcile job failed'));
  if (options.schedule ?? true) {
    await reconcile.upsertJobScheduler(
      JOB_IDS.reconcileSchedule,
      { every: RECONCILE_EVERY_MS },
      { data: {} },
    );
  }
  return {
    reconcile,
    async reconcileTx(txHash) {
      await reconcile.add('reconcile-tx', { txHash }, { jobId: JOB_IDS.reconcileTx(txHash) });
    },
    async close() {
      await worker.close();
      await reconcile.close();
      await Promise.all(connections.map(closeRedis));
    },
  };
}
