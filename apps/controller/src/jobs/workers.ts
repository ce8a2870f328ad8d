// The controller's BullMQ queues, workers and schedules. Queues exist in every controller (the
// admin routes enqueue); workers only where `workers` is on, except the create-escrow worker, which
// every controller runs because its own admin route waits for the job. On-demand jobs (create,
// the settle flow: its finalize child, then the settle) run on every controller; the scheduled
// upkeep passes run only on the holder of the leader lease (leader-lease.ts), which registers
// their schedules, reconciles open commitments at once and rebuilds the pool each time it takes
// the lead. A schedule is one entry of `scheduled` below: its
// queue, scheduler id, period and processor — the lead starts and stops them all alike. Each worker
// gets its own Redis connection (a worker blocks on it); everything shares the configured prefix.
import { closeRedis, openRedis, orderEscrowCut } from '@gonka-gateway/shared';
import { FlowProducer, type Job, Queue, QueueEvents, UnrecoverableError, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { sampleBlockTime } from '../chain/block-time.js';
import { MAX_LOCKED_OPERATIONS } from '../chain/commitments.js';
import type { ControllerContext } from '../controller-context.js';
import { finalizeForSettle, settleEscrow } from '../escrow/settle.js';
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
  workerLocks,
} from './queues.js';
import { reconcileOpenCommitments } from './reconcile-commitments.js';
import { awaitSettleAttempt, flowAttempts, type SettleAttemptEnd, type SettleJobData } from './settle-run.js';

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
  /** The finalize children of the settle flows. */
  finalize: Queue<SettleJobData>;
  /**
   * Enqueues the settle flow of an escrow once (finalize child, then settle; a finished one is
   * replaced, so a failed one is retried); returns the settle job's id.
   */
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
  options: {
    redisUrl: string;
    workers: boolean;
    leaderTtlMs: number;
    rotationTickMs?: number;
    /** GATEWAY_JOB_LOCK_MS (default 15 s). */
    jobLockMs?: number;
  },
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
  const finalize = new Queue<SettleJobData>(QUEUE_NAMES.finalize, queueOptions);
  // Flows take no queue defaults: each job of a settle flow gets DEFAULT_JOB_OPTIONS explicitly.
  const flows = new FlowProducer({ connection: connection(), prefix });
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
  /**
   * One settle flow per escrow (architecture §1: every money-moving action is a job): the parent
   * `settle` job (escrow/settle.ts settleEscrow) runs once its child `finalize` job
   * (finalizeForSettle) has completed; a child that fails for good fails the parent with the
   * child's reason. Both ids are
   * the escrow's, so a double click or a second controller joins the flow under way.
   */
  const enqueueSettle = async (
    escrowId: bigint,
    privateKeyEnv: string,
    options: SettleEnqueueOptions = {},
  ): Promise<string> => {
    const jobId = JOB_IDS.settle(escrowId);
    const childId = JOB_IDS.finalize(escrowId);
    const existing = await settle.getJob(jobId);
    if (existing) {
      const state = await existing.getState();
      // Waiting, waiting for its child, or running: the same settle is under way, never a second one.
      if (state !== 'failed' && state !== 'completed') {
        const child = await finalize.getJob(childId);
        if (options.force && !existing.data.force) {
          await existing.updateData({ ...existing.data, force: true });
          if (child) await child.updateData({ ...child.data, force: true });
          // An attempt already draining the escrow: its owner and its finalize read the order.
          await orderEscrowCut(ctx.redis, ctx.keys, escrowId);
        }
        if (options.now) {
          if (state === 'delayed') await existing.promote().catch(() => undefined);
          if (child && (await child.getState()) === 'delayed') await child.promote().catch(() => undefined);
        }
        return jobId;
      }
      // A finished run is replaced by a fresh one with this request's key name (its child goes
      // with it); both jobs are idempotent (a settled escrow is done, a stored finalize document
      // is returned as it is, a committed tx is reconciled before anything).
      await existing.remove();
    }
    // A child kept longer than its parent (or left by a removed one) is finished: the new flow
    // runs its own. One still under way is taken over as the new parent's child.
    const stale = await finalize.getJob(childId);
    if (stale) {
      const state = await stale.getState();
      if (state === 'completed' || state === 'failed') await stale.remove();
    }
    const data: SettleJobData = {
      escrowId: escrowId.toString(),
      privateKeyEnv,
      ...(options.force ? { force: true } : {}),
    };
    await flows.add({
      name: 'settle',
      queueName: QUEUE_NAMES.settle,
      data,
      opts: { ...DEFAULT_JOB_OPTIONS, jobId },
      children: [
        {
          name: 'finalize',
          queueName: QUEUE_NAMES.finalize,
          data,
          opts: { ...DEFAULT_JOB_OPTIONS, jobId: childId, continueParentOnFailure: true },
        },
      ],
    });
    return jobId;
  };
  const runSettle: ControllerJobs['runSettle'] = async (escrowId, privateKeyEnv, options) => {
    const settleId = await enqueueSettle(escrowId, privateKeyEnv, options);
    const ids = { settle, finalize, settleId, finalizeId: JOB_IDS.finalize(escrowId) };
    return awaitSettleAttempt({ ...ids, before: await flowAttempts(ids) }, options.stop);
  };
  const settleGaveUp = async (escrowId: bigint): Promise<string | undefined> => {
    // Failed before using its attempts: BullMQ's UnrecoverableError (settle.ts rule violations),
    // in the child (the pre-checks and the finalize) or in the parent (the settle tx).
    const gaveUp = async (job: Job<SettleJobData> | undefined) => {
      if (!job || (await job.getState()) !== 'failed') return undefined;
      return {
        reason:
          job.attemptsMade < (job.opts.attempts ?? 1) ? (job.failedReason ?? 'settle failed') : undefined,
      };
    };
    const child = await gaveUp(await finalize.getJob(JOB_IDS.finalize(escrowId)));
    if (child) return child.reason;
    return (await gaveUp(await settle.getJob(JOB_IDS.settle(escrowId))))?.reason;
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
    ...workerLocks(options.jobLockMs),
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
          async (job: Job<SettleJobData>) => {
            // A finalize child that failed for good (continueParentOnFailure) ends the settle with
            // the child's own reason, which the batch codes and rotation's give-up read.
            const [childFailure] = Object.values(await job.getIgnoredChildrenFailures());
            if (childFailure !== undefined) throw new UnrecoverableError(childFailure);
            return settleEscrow(ctx, BigInt(job.data.escrowId), job.data.privateKeyEnv, {
              force: job.data.force === true,
              windowReported: true,
            });
          },
          workerOptions(2),
        ),
      ),
      watch(
        new Worker(
          QUEUE_NAMES.finalize,
          async (job: Job<SettleJobData>) =>
            finalizeForSettle(ctx, BigInt(job.data.escrowId), job.data.privateKeyEnv, {
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
    finalize,
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
      await flows.close();
      await Promise.all(
        [createEscrow, settle, finalize, ...scheduled.map((s) => s.queue)].map((q) => q.close()),
      );
      await Promise.all(connections.map(closeRedis));
    },
  };
}
