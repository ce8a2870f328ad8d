// The controller's BullMQ queues, workers and schedules. Queues exist in every controller (the
// admin routes enqueue); workers only where `workers` is on, except the create-escrow worker, which
// every controller runs because its own admin route waits for the job. On-demand jobs (create,
// settle) run on every controller; the scheduled upkeep passes run only on the holder of the leader lease
// (leader-lease.ts), which registers their schedules, reconciles open commitments at once and
// rebuilds the pool each time it takes the lead. A schedule is one entry of `scheduled` below: its
// queue, scheduler id, period and processor — the lead starts and stops them all alike. Each worker
// gets its own Redis connection (a worker blocks on it); everything shares the configured prefix.
import { closeRedis, openRedis, orderEscrowCut } from '@gonka-gateway/shared';
import { type Job, Queue, QueueEvents, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { sampleBlockTime } from '../chain/block-time.js';
import { MAX_LOCKED_OPERATIONS } from '../chain/commitments.js';
import type { ControllerContext } from '../controller-context.js';
import { settleEscrow } from '../escrow/settle.js';
import { publishChainPhase, republishLastKnownPhase } from '../upkeep/chain-phase.js';
import { checkDepletion } from '../upkeep/depletion-check.js';
import { rebuildPool } from '../upkeep/pool-rebuild.js';
import { purgeOldRotationEvents } from '../upkeep/rotation-events-purge.js';
import { runRotationTick } from '../upkeep/rotation-tick.js';
import { purgeExpiredUsage } from '../usage/usage-retention.js';
import {
  type CreateEscrowJobData,
  type CreateJobAnswer,
  enqueueCreate,
  runCreateEscrowJob,
} from './create-escrow-job.js';
import { LeaderLease } from './leader-lease.js';
import { NodeBackoff } from './node-backoff.js';
import {
  DEFAULT_JOB_OPTIONS,
  DEPLETION_CHECK_EVERY_MS,
  JOB_IDS,
  QUEUE_NAMES,
  RECONCILE_EVERY_MS,
  ROTATION_EVENTS_PURGE_EVERY_MS,
  ROTATION_TICK_EVERY_MS,
  USAGE_PURGE_EVERY_MS,
  WORKER_LOCKS,
} from './queues.js';
import { reconcileOpenCommitments } from './reconcile-commitments.js';
import { awaitSettleAttempt, type SettleAttemptEnd, type SettleJobData } from './settle-run.js';

export type { SettleJobData } from './settle-run.js';

/** How an operator's settle request joins the escrow's settle job. */
export interface SettleEnqueueOptions {
  /** Cut in-flight requests (escrow/finalize.ts); upgrades a job that is waiting or running. */
  force?: boolean;
  /** Run a job waiting out its retry backoff now (an operator asked; rotation leaves the backoff). */
  now?: boolean;
}

export interface ControllerJobs {
  reconcile: Queue;
  createEscrow: Queue<CreateEscrowJobData>;
  /** Enqueues a create once per request key and waits up to `waitMs` for its answer. */
  runCreate(data: CreateEscrowJobData, waitMs: number): Promise<CreateJobAnswer>;
  settle: Queue<SettleJobData>;
  /** Enqueues the settle job of an escrow once (a failed one is retried); returns its id. */
  enqueueSettle(escrowId: bigint, privateKeyEnv: string, options?: SettleEnqueueOptions): Promise<string>;
  /**
   * enqueueSettle, then waits for the job's attempt under way to end (jobs/settle-run.ts);
   * undefined when `stop` fired first or the job vanished.
   */
  runSettle(
    escrowId: bigint,
    privateKeyEnv: string,
    options: SettleEnqueueOptions & { stop?: AbortSignal },
  ): Promise<SettleAttemptEnd | undefined>;
  /** Whether this controller holds the leader lease (runs the schedules). */
  leading(): boolean;
  /**
   * Why the escrow's settle job failed for good (an UnrecoverableError: wrong key, window closed,
   * refused tx), or undefined while it may still succeed.
   */
  settleGaveUp(escrowId: bigint): Promise<string | undefined>;
  /** One rotation tick now (after a settings change of this revision). */
  kickRotation(revision: string): Promise<void>;
  close(): Promise<void>;
}

/** A repeating upkeep pass: run only by the leading controller. */
interface ScheduledJob {
  queue: Queue;
  schedulerId: string;
  everyMs: number;
  process(job: Job): Promise<unknown>;
  /** Options of each scheduled job (default: DEFAULT_JOB_OPTIONS of the queue). */
  opts?: { attempts: number; removeOnComplete: { count: number }; removeOnFail: { count: number } };
}

export async function startControllerJobs(
  ctx: ControllerContext,
  options: { redisUrl: string; workers: boolean; leaderTtlMs: number; rotationTickMs?: number },
): Promise<ControllerJobs> {
  // Named after the controller, so CLIENT LIST shows whose they are.
  const open = () => openRedis(options.redisUrl, { name: `controller-bullmq:${ctx.controllerId}` });
  const connections: Redis[] = [];
  const connection = () => {
    const c = open();
    connections.push(c);
    return c;
  };
  const prefix = ctx.keys.bullPrefix;
  const queueOptions = { connection: connection(), prefix, defaultJobOptions: DEFAULT_JOB_OPTIONS };
  const reconcile = new Queue(QUEUE_NAMES.reconcileCommitments, queueOptions);
  const settle = new Queue<SettleJobData>(QUEUE_NAMES.settle, queueOptions);
  const createEscrow = new Queue<CreateEscrowJobData>(QUEUE_NAMES.createEscrow, queueOptions);
  // The admin route waits on job completion events (its own blocking connection).
  const createEvents = new QueueEvents(QUEUE_NAMES.createEscrow, { connection: connection(), prefix });
  await createEvents.waitUntilReady();
  // Every waiting admin request listens on both until its job ends: no leak, just many at once.
  createEscrow.setMaxListeners(1_000);
  createEvents.setMaxListeners(1_000);
  const depletion = new Queue(QUEUE_NAMES.depletionCheck, queueOptions);
  const usagePurge = new Queue(QUEUE_NAMES.usagePurge, queueOptions);
  const rotationEventsPurge = new Queue(QUEUE_NAMES.rotationEventsPurge, queueOptions);
  const rotation = new Queue(QUEUE_NAMES.rotationTick, queueOptions);
  const chainPhase = new Queue(QUEUE_NAMES.chainPhase, queueOptions);
  const rotationTickMs = options.rotationTickMs ?? ROTATION_TICK_EVERY_MS;
  const enqueueSettle = async (
    escrowId: bigint,
    privateKeyEnv: string,
    options: SettleEnqueueOptions = {},
  ): Promise<string> => {
    const jobId = JOB_IDS.settle(escrowId);
    const existing = await settle.getJob(jobId);
    if (existing) {
      const state = await existing.getState();
      // Waiting or running: the same settle is under way, never a second one.
      if (state !== 'failed' && state !== 'completed') {
        if (options.force && !existing.data.force) {
          await existing.updateData({ ...existing.data, force: true });
          // An attempt already draining the escrow: its owner and its finalize read the order.
          await orderEscrowCut(ctx.redis, ctx.keys, escrowId);
        }
        if (options.now && state === 'delayed') await existing.promote().catch(() => undefined);
        return jobId;
      }
      // A finished run is replaced by a fresh one with this request's key name; the job itself
      // is idempotent (a settled escrow is done, a committed tx is reconciled before anything).
      await existing.remove();
    }
    await settle.add(
      'settle',
      { escrowId: escrowId.toString(), privateKeyEnv, ...(options.force ? { force: true } : {}) },
      { jobId },
    );
    return jobId;
  };
  const runSettle: ControllerJobs['runSettle'] = async (escrowId, privateKeyEnv, options) => {
    const jobId = await enqueueSettle(escrowId, privateKeyEnv, options);
    const attemptsBefore = (await settle.getJob(jobId))?.attemptsMade ?? 0;
    return awaitSettleAttempt(settle, jobId, attemptsBefore, options.stop);
  };
  const settleGaveUp = async (escrowId: bigint): Promise<string | undefined> => {
    const job = await settle.getJob(JOB_IDS.settle(escrowId));
    if (!job || (await job.getState()) !== 'failed') return undefined;
    // Failed before using its attempts: BullMQ's UnrecoverableError (settle.ts rule violations).
    return job.attemptsMade < (job.opts.attempts ?? 1) ? (job.failedReason ?? 'settle failed') : undefined;
  };
  // A failed tick or phase poll is not retried: the next one comes within seconds.
  const once = { attempts: 1, removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } };
  // The passes that need the node back off while it is unreachable (node-backoff.ts).
  const chainPhaseEveryMs = Math.max(1_000, Math.floor(rotationTickMs / 3));
  const rotationBackoff = new NodeBackoff({
    name: 'rotation-tick',
    everyMs: rotationTickMs,
    logger: ctx.logger,
  });
  const phaseBackoff = new NodeBackoff({
    name: 'chain-phase',
    everyMs: chainPhaseEveryMs,
    logger: ctx.logger,
  });
  const scheduled: ScheduledJob[] = [
    {
      queue: reconcile,
      schedulerId: JOB_IDS.reconcileSchedule,
      everyMs: RECONCILE_EVERY_MS,
      process: (job: Job<{ txHash?: string }>) => reconcileOpenCommitments(ctx, job.data.txHash),
    },
    {
      queue: depletion,
      schedulerId: JOB_IDS.depletionSchedule,
      everyMs: DEPLETION_CHECK_EVERY_MS,
      process: async () => {
        const findings = await checkDepletion(ctx, { enqueueSettle });
        return findings.map((f) => ({ ...f, escrowId: f.escrowId.toString() }));
      },
    },
    {
      queue: usagePurge,
      schedulerId: JOB_IDS.usagePurgeSchedule,
      everyMs: USAGE_PURGE_EVERY_MS,
      process: () => purgeExpiredUsage(ctx.sql),
    },
    {
      queue: rotationEventsPurge,
      schedulerId: JOB_IDS.rotationEventsPurgeSchedule,
      everyMs: ROTATION_EVENTS_PURGE_EVERY_MS,
      process: () => purgeOldRotationEvents(ctx.sql),
    },
    {
      // A tick never overlaps another (one worker, and a Redis lock across controllers).
      queue: rotation,
      schedulerId: JOB_IDS.rotationSchedule,
      everyMs: rotationTickMs,
      opts: once,
      process: () =>
        rotationBackoff.run(async () => {
          const tick = await runRotationTick(ctx, { enqueueSettle, settleGaveUp });
          return { ran: tick.ran, step: tick.step?.stage ?? null, stages: tick.stages.length };
        }),
    },
    {
      queue: chainPhase,
      schedulerId: JOB_IDS.chainPhaseSchedule,
      everyMs: chainPhaseEveryMs,
      opts: once,
      // While the node is down the last known phase is republished (marked stale) on every run; the
      // node itself is asked again on the backoff's schedule.
      process: () =>
        phaseBackoff.run(
          async () => {
            const p = await publishChainPhase(ctx);
            // The block time estimate (chain/block-time.ts) is measured on this schedule only.
            const blockTime = await sampleBlockTime(ctx, p.blockHeight);
            return {
              epoch: p.epoch.toString(),
              phase: p.phase,
              pocActive: p.pocActive,
              msPerBlock: blockTime?.msPerBlock ?? null,
            };
          },
          async (err, first) => {
            const copy = await republishLastKnownPhase(ctx, err, first);
            return { stale: true, readAt: copy.readAt.toISOString(), pocActive: copy.pocActive };
          },
        ),
    },
  ];
  const workerOptions = (concurrency: number, own: Redis = connection()) => ({
    connection: own,
    prefix,
    concurrency,
    // Stored on each job it processes (job.processedBy) and listed by Queue.getWorkers().
    name: ctx.controllerId,
    ...WORKER_LOCKS,
  });
  const watch = (w: Worker) =>
    w.on('failed', (job, err) =>
      ctx.logger.warn({ queue: w.name, jobId: job?.id, err: err.message }, 'job failed'),
    );

  // A few at a time: each holds a business lock slot for its broadcast and poll.
  const workers: Worker[] = [
    watch(
      new Worker(
        QUEUE_NAMES.createEscrow,
        (job: Job<CreateEscrowJobData>) => runCreateEscrowJob(ctx, job),
        workerOptions(MAX_LOCKED_OPERATIONS),
      ),
    ),
  ];
  let scheduleWorkers: Worker[] = [];
  // The schedule workers' connections live as long as one leadership: BullMQ leaves a connection it
  // was given open when its worker closes, and a controller that loses and regains the lease would
  // otherwise open a new set each time.
  let scheduleConnections: Redis[] = [];
  const stopScheduleWorkers = async () => {
    const [stopping, opened] = [scheduleWorkers, scheduleConnections];
    scheduleWorkers = [];
    scheduleConnections = [];
    await Promise.all(stopping.map((w) => w.close()));
    await Promise.all(opened.map(closeRedis));
  };
  let leader: LeaderLease | undefined;
  let leads = 0;
  ctx.metrics?.leader.set(0);
  if (options.workers) {
    workers.push(
      watch(
        new Worker(
          QUEUE_NAMES.settle,
          async (job: Job<SettleJobData>) =>
            settleEscrow(ctx, BigInt(job.data.escrowId), job.data.privateKeyEnv, {
              force: job.data.force === true,
            }),
          workerOptions(2),
        ),
      ),
    );
    leader = new LeaderLease({
      redis: ctx.redis,
      keys: ctx.keys,
      controllerId: ctx.controllerId,
      ttlMs: options.leaderTtlMs,
      logger: ctx.logger,
      onLead: async () => {
        leads++;
        ctx.metrics?.leader.set(1);
        scheduleWorkers = scheduled.map((s) => {
          const own = open();
          scheduleConnections.push(own);
          return watch(new Worker(s.queue.name, s.process, workerOptions(1, own)));
        });
        for (const s of scheduled) {
          await s.queue.upsertJobScheduler(
            s.schedulerId,
            { every: s.everyMs },
            { data: {}, ...(s.opts ? { opts: s.opts } : {}) },
          );
        }
        // Crash recovery does not wait for the schedule: commitments a dead controller left
        // broadcast or unknown are looked up by hash now (an included create is registered).
        await reconcile.add('reconcile', {}, { jobId: JOB_IDS.reconcileOnLead(ctx.controllerId, leads) });
        await rebuildPool(ctx);
      },
      onFollow: async () => {
        ctx.metrics?.leader.set(0);
        // Set by the leader's rotation tick only: a follower's last value would be stale.
        ctx.metrics?.escrowsPastRetireBy.set(0);
        await stopScheduleWorkers();
      },
    });
    await leader.start();
  }
  return {
    reconcile,
    createEscrow,
    runCreate: (data, waitMs) => enqueueCreate(createEscrow, createEvents, data, waitMs),
    settle,
    enqueueSettle,
    runSettle,
    leading: () => leader?.leading ?? false,
    settleGaveUp,
    async kickRotation(revision) {
      // Run by the leader's rotation worker, wherever the settings changed.
      await rotation.add('rotation-tick', {}, { jobId: JOB_IDS.rotationKick(revision), attempts: 1 });
    },
    async close() {
      await leader?.stop();
      await stopScheduleWorkers();
      await Promise.all(workers.map((w) => w.close()));
      await createEvents.close();
      await Promise.all([createEscrow, settle, ...scheduled.map((s) => s.queue)].map((q) => q.close()));
      await Promise.all(connections.map(closeRedis));
    },
  };
}
