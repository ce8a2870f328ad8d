// Following one settle flow for an operator (the batch settle, escrow/settle-batch.ts): the settle
// job and its finalize child have the escrow's ids (queues.ts JOB_IDS.settle, JOB_IDS.finalize), so
// a second batch, a single settle or a retry joins the same flow, and the flow never settles twice
// (escrow/settle.ts). What is followed is the attempt under way, of the child or the parent: it
// ends `completed` (the tx hash, or null when the chain reported the escrow settled already),
// `failed` for good (UnrecoverableError), or failed with retries left — the job then carries on in
// the background with BullMQ's backoff, and a later batch reports its end.
import type { Queue } from 'bullmq';
import type { SettleResult } from '../escrow/settle.js';

export interface SettleJobData {
  escrowId: string;
  privateKeyEnv: string;
  /** Cut in-flight requests instead of waiting for them (escrow/finalize.ts). */
  force?: boolean;
}

export type SettleAttemptEnd =
  | { kind: 'completed'; txHash: string | null }
  | { kind: 'failed'; reason: string; retrying: boolean };

/** How often the job's record is read while an attempt runs. */
const POLL_MS = 200;

/** The two jobs of one escrow's settle flow, and the attempts each had made when the wait began. */
export interface SettleFlowJobs {
  settle: Queue<SettleJobData>;
  finalize: Queue<SettleJobData>;
  settleId: string;
  finalizeId: string;
  before: { settle: number; finalize: number };
}

/** The attempts each job of the flow has made so far (0 for a job not there). */
export async function flowAttempts(
  jobs: Pick<SettleFlowJobs, 'settle' | 'finalize' | 'settleId' | 'finalizeId'>,
): Promise<SettleFlowJobs['before']> {
  const [settle, finalize] = await Promise.all([
    jobs.settle.getJob(jobs.settleId),
    jobs.finalize.getJob(jobs.finalizeId),
  ]);
  return { settle: settle?.attemptsMade ?? 0, finalize: finalize?.attemptsMade ?? 0 };
}

/**
 * Waits until an attempt of either job after those of `before` ends; undefined when `stop` fires
 * first (the controller is closing) or the settle job is gone (removed by an operator). A failure
 * of the finalize child is reported with the child's own reason (the parent only says "child …
 * failed"), so the batch's error codes (escrow/settle-batch.ts) read the cause.
 */
export async function awaitSettleAttempt(
  flow: SettleFlowJobs,
  stop?: AbortSignal,
): Promise<SettleAttemptEnd | undefined> {
  while (!stop?.aborted) {
    const state = await flow.settle.getJobState(flow.settleId);
    // Read after the state: a job fetched while still active carries no result or reason yet.
    const job = await flow.settle.getJob(flow.settleId);
    if (state === 'unknown' || !job) return undefined;
    if (state === 'completed') {
      return { kind: 'completed', txHash: (job.returnvalue as SettleResult | null)?.txHash ?? null };
    }
    const childState = await flow.finalize.getJobState(flow.finalizeId);
    const child = await flow.finalize.getJob(flow.finalizeId);
    if (child && childState === 'failed') {
      return { kind: 'failed', reason: child.failedReason ?? 'finalize failed', retrying: false };
    }
    if (state === 'failed') {
      return { kind: 'failed', reason: job.failedReason ?? 'settle failed', retrying: false };
    }
    if (
      child &&
      child.attemptsMade > flow.before.finalize &&
      childState !== 'active' &&
      childState !== 'completed'
    ) {
      return { kind: 'failed', reason: child.failedReason ?? 'finalize attempt failed', retrying: true };
    }
    if (job.attemptsMade > flow.before.settle && state !== 'active') {
      return { kind: 'failed', reason: job.failedReason ?? 'settle attempt failed', retrying: true };
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return undefined;
}
