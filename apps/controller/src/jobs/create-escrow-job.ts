// The `create-escrow` job (architecture §1: every money-moving action is a job). The admin route
// checks the request and enqueues; this job runs escrow/create.ts — commitment → broadcast → poll →
// register — on whichever controller's worker takes it, and a worker that died mid-way leaves the
// job stalled, so a live worker runs it again and resumes the same commitment (the same tx bytes,
// never a second tx for one key). The job id is the request key, so a double click or two
// controllers enqueue one job. Answers another attempt would only repeat (the chain refused the tx,
// the outcome is unknown, bad input found late) end the job with UnrecoverableError; anything else
// (node or database unreachable) is retried with backoff.
import { ChainError, type PrivateKey } from '@gonka-gateway/chain';
import { CreatorKeyError, creatorKeyOf } from '@gonka-gateway/escrow-runtime';
import { GatewayError } from '@gonka-gateway/shared';
import { type Job, type Queue, type QueueEvents, UnrecoverableError } from 'bullmq';
import type { ControllerContext } from '../controller-context.js';
import {
  type CreateEscrowResponse,
  createEscrow,
  FinalCreateError,
  idempotencyConflict,
  loadKeySource,
  type RequestFingerprint,
  type StoredKeySource,
  sameRequest,
} from '../escrow/create.js';
import type { KeySource } from '../escrow/register.js';
import { JOB_IDS } from './queues.js';

/** No private key ever: an env variable's name, or the key sealed under GATEWAY_ENCRYPTION_KEY. */
export interface CreateEscrowJobData {
  request_key: string;
  request: RequestFingerprint;
  key_source: StoredKeySource;
}

export type CreateJobAnswer =
  | { done: CreateEscrowResponse }
  /** The wait ended first: the job carries on; follow it with GET /v1/admin/escrows/jobs/{job_id}. */
  | { pending: { jobId: string; state: string } };

/** A GatewayError survives BullMQ's failedReason (a string) as JSON, so the route answers it as is. */
const encodeError = (err: GatewayError): string =>
  JSON.stringify({ code: err.code, message: err.message, param: err.param });

export function decodeJobError(failedReason: string | undefined): GatewayError {
  try {
    const e = JSON.parse(failedReason ?? '') as {
      code: GatewayError['code'];
      message: string;
      param: string | null;
    };
    if (typeof e.code === 'string' && typeof e.message === 'string')
      return new GatewayError(e.code, e.message, e.param === null ? {} : { param: e.param });
  } catch {}
  // Not a rule violation (those are encoded above): the job stalled past BullMQ's limit (its
  // controller died repeatedly) or a transient fault outlasted the retries. Nothing unknown was
  // left behind: the commitment of the key records any broadcast, so the same request with the same
  // Idempotency-Key resumes that tx (or reports its outcome) instead of sending a second one.
  return new GatewayError(
    'service_unavailable',
    'the create job did not complete (interrupted or a transient fault outlasted its retries); retry with the same Idempotency-Key to resume it',
  );
}

/**
 * The key the job's stored key source names (any controller may run the job): through the one
 * creator-key resolver (escrow-runtime creator-key.ts), which wipes a decrypted key's plaintext.
 * Errors are the request's (4xx, naming the field), so the job ends on them without retrying.
 */
function jobCreatorKey(ctx: ControllerContext, source: KeySource): PrivateKey {
  const param = 'env' in source ? 'private_key_env' : 'private_key';
  try {
    return creatorKeyOf(
      'the request',
      {
        signerKeyEnv: 'env' in source ? source.env : null,
        signerKeyEncrypted: 'sealed' in source ? source.sealed : null,
      },
      ctx.env,
      { encryptionKey: ctx.encryptionKey },
    );
  } catch (err) {
    const detail =
      err instanceof ChainError
        ? `${param}: ${err.detail ?? err.message}`
        : err instanceof CreatorKeyError
          ? err.message
          : `${param}: the creator key is unusable`;
    throw new GatewayError('invalid_request', detail, { param });
  }
}

export async function runCreateEscrowJob(
  ctx: ControllerContext,
  job: Job<CreateEscrowJobData>,
): Promise<CreateEscrowResponse> {
  const { request, key_source: stored, request_key: requestKey } = job.data;
  try {
    const keySource = loadKeySource(stored);
    return await createEscrow(ctx, {
      amount: BigInt(request.amount),
      modelId: request.model_id,
      chainId: request.chain_id,
      register: request.register,
      key: jobCreatorKey(ctx, keySource),
      keySource,
      requestKey,
    });
  } catch (err) {
    if (err instanceof FinalCreateError || (err instanceof GatewayError && err.status < 500)) {
      throw new UnrecoverableError(encodeError(err));
    }
    throw err;
  }
}

/**
 * Enqueues the create once (a finished-failed job of the key is replaced: a failed create leaves the
 * key usable, and a retry after an unknown outcome asks the chain by hash) and waits up to `waitMs`.
 * The same key for a different request waiting in the queue is a 409, as for a committed one.
 */
export async function enqueueCreate(
  queue: Queue<CreateEscrowJobData>,
  events: QueueEvents,
  data: CreateEscrowJobData,
  waitMs: number,
): Promise<CreateJobAnswer> {
  const jobId = JOB_IDS.createEscrow(data.request_key);
  const previous = await queue.getJob(jobId);
  if (previous && (await previous.getState()) === 'failed') await previous.remove().catch(() => undefined);
  // With an existing id BullMQ adds nothing: a concurrent request or controller shares the job.
  await queue.add('create-escrow', data, { jobId });
  const job = await queue.getJob(jobId);
  if (!job) throw new GatewayError('internal_error', `create job ${jobId} vanished before it ran`);
  if (!sameRequest(job.data.request, data.request)) {
    throw idempotencyConflict();
  }
  try {
    return { done: (await job.waitUntilFinished(events, waitMs)) as CreateEscrowResponse };
  } catch {
    // Failed, or the wait ran out: the job's own record says which.
    const now = await queue.getJob(jobId);
    const state = now ? await now.getState() : 'unknown';
    if (now && state === 'completed') return { done: now.returnvalue as CreateEscrowResponse };
    if (now && state === 'failed') throw decodeJobError(now.failedReason);
    return { pending: { jobId, state } };
  }
}
