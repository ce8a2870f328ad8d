// Following one settle job for an operator (the batch settle, escrow/settle-batch.ts): the job id is
// the escrow's (queues.ts JOB_IDS.settle), so a second batch, a single settle or a retry joins the
// same job, and the job itself never settles twice (escrow/settle.ts). What is followed is the
// attempt under way: it ends `completed` (the tx hash, or null when the chain reported the escrow
// settled already), `failed` for good (UnrecoverableError), or failed with retries left — the job
// then carries on in the background with BullMQ's backoff, and a later batch reports its end.
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

/**
 * Waits until an attempt after the first `attemptsBefore` ends; undefined when `stop` fires first
 * (the controller is closing) or the job is gone (removed by an operator).
 */
export async function awaitSettleAttempt(
  queue: Queue<SettleJobData>,
  jobId: string,
  attemptsBefore: number,
  stop?: AbortSignal,
): Promise<SettleAttemptEnd | undefined> {
  while (!stop?.aborted) {
    const state = await queue.getJobState(jobId);
    // Read after the state: a job fetched while still active carries no result or reason yet.
    const job = await queue.getJob(jobId);
    if (state === 'unknown' || !job) return undefined;
    if (state === 'completed') {
      return { kind: 'completed', txHash: (job.returnvalue as SettleResult | null)?.txHash ?? null };
    }
    if (state === 'failed') {
      return { kind: 'failed', reason: job.failedReason ?? 'settle failed', retrying: false };
    }
    if (job.attemptsMade > attemptsBefore && state !== 'active') {
      return { kind: 'failed', reason: job.failedReason ?? 'settle attempt failed', retrying: true };
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return undefined;
}
