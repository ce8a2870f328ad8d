// POST /v1/admin/escrows (spec §4): create an escrow on chain and, with register=true, register it
// so the proxies claim it. The pre-checks run here, so bad input answers 4xx at once and changes
// nothing; the create itself is the `create-escrow` job (jobs/create-escrow-job.ts, guarantees in
// escrow/create.ts), whose answer the request waits for. When the wait runs out the answer is 202
// with the job id and the tx hash; GET /v1/admin/escrows/jobs/{job_id} follows the job.
// With `wait_until_serving` a registered escrow's answer also waits (bounded) until a proxy replica
// owns it and serves it, and says so in `serving` (escrow/serving.ts).
import { GatewayError } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import type { ControllerContext } from '../controller-context.js';
import {
  type CreateEscrowResponse,
  createRequestKey,
  createTxHash,
  fingerprintOf,
  precheckCreate,
  storeKeySource,
} from '../escrow/create.js';
import { resolveCreatorKey } from '../escrow/key-fields.js';
import { SERVING_WAIT_MS, waitUntilServing } from '../escrow/serving.js';
import { decodeJobError } from '../jobs/create-escrow-job.js';
import type { ControllerJobs } from '../jobs/workers.js';
import { envNameSchema, errorResponses, toUint, uintSchema } from './schemas.js';

interface CreateBody {
  amount: number | string;
  model_id: string;
  chain_id: string;
  register?: boolean;
  wait_until_serving?: boolean;
  private_key?: string;
  private_key_env?: string;
}

/** The `serving` answer of a create or register that asked for `wait_until_serving`. */
export const SERVING_SCHEMA = {
  type: 'boolean',
  description:
    'Only with wait_until_serving: a proxy replica owns the escrow and serves it (pool status active, owner set). ' +
    `false when that did not happen within ${SERVING_WAIT_MS / 1000} s, or the escrow is not registered active.`,
} as const;

/** The body field that asks for it. */
export const WAIT_UNTIL_SERVING_SCHEMA = {
  type: 'boolean',
  default: false,
  description: `Answer once a proxy replica serves the escrow (at most ${SERVING_WAIT_MS / 1000} s more); the answer gains \`serving\`.`,
} as const;

const createdSchema = {
  type: 'object',
  required: ['escrow_id', 'tx_hash', 'creator', 'registered'],
  properties: {
    escrow_id: { type: 'integer' },
    tx_hash: { type: 'string' },
    creator: { type: 'string' },
    registered: { type: 'boolean' },
    serving: SERVING_SCHEMA,
  },
} as const;

const createSchema = {
  headers: {
    type: 'object',
    properties: { 'idempotency-key': { type: 'string', minLength: 1, maxLength: 200 } },
  },
  body: {
    type: 'object',
    required: ['amount', 'model_id', 'chain_id'],
    additionalProperties: false,
    properties: {
      amount: { ...uintSchema, description: 'Deposit in ngonka (integer or decimal string).' },
      model_id: { type: 'string', minLength: 1, maxLength: 256 },
      chain_id: { type: 'string', minLength: 1, maxLength: 128 },
      register: { type: 'boolean', default: false },
      wait_until_serving: WAIT_UNTIL_SERVING_SCHEMA,
      private_key: { type: 'string', description: '64 hex characters; stored encrypted, never returned.' },
      private_key_env: {
        ...envNameSchema,
        description: 'Name of a controller env variable holding the key.',
      },
    },
  },
  response: {
    200: createdSchema,
    202: {
      type: 'object',
      description: 'The create job is still running: follow it with GET /v1/admin/escrows/jobs/{job_id}.',
      required: ['job_id', 'state', 'tx_hash'],
      properties: {
        job_id: { type: 'string' },
        state: { type: 'string' },
        tx_hash: { type: ['string', 'null'], description: 'The committed create tx, once it is signed.' },
        serving: SERVING_SCHEMA,
      },
    },
    ...errorResponses,
  },
} as const;

const jobSchema = {
  params: {
    type: 'object',
    required: ['job_id'],
    properties: { job_id: { type: 'string', minLength: 1, maxLength: 200 } },
  },
  response: {
    200: {
      type: 'object',
      required: ['job_id', 'state', 'tx_hash', 'result', 'error'],
      properties: {
        job_id: { type: 'string' },
        state: { type: 'string', description: 'BullMQ state: waiting, active, delayed, completed, failed.' },
        tx_hash: { type: ['string', 'null'] },
        result: { anyOf: [createdSchema, { type: 'null' }] },
        error: {
          anyOf: [
            {
              type: 'object',
              properties: {
                code: { type: 'string' },
                message: { type: 'string' },
                param: { type: ['string', 'null'] },
              },
            },
            { type: 'null' },
          ],
        },
      },
    },
    ...errorResponses,
  },
} as const;

export async function escrowsRoutes(
  app: FastifyInstance,
  options: { ctx: ControllerContext; jobs: ControllerJobs; waitMs: number },
): Promise<void> {
  const { ctx, jobs } = options;
  app.post<{ Body: CreateBody; Headers: { 'idempotency-key'?: string } }>(
    '/v1/admin/escrows',
    { schema: createSchema },
    async (request, reply) => {
      const body = request.body;
      const amount = toUint(body.amount, 'amount');
      const { key, source } = resolveCreatorKey(ctx, body);
      const requestKey = createRequestKey(request.headers['idempotency-key']);
      const req = {
        amount,
        modelId: body.model_id,
        chainId: body.chain_id,
        register: body.register ?? false,
        key,
        keySource: source,
        requestKey,
      };
      // Not part of the create's fingerprint: it changes the answer, not the escrow.
      const waitServing = body.wait_until_serving === true;
      const withServing = async (created: CreateEscrowResponse) =>
        waitServing
          ? {
              ...created,
              serving: created.registered && (await waitUntilServing(ctx, BigInt(created.escrow_id))),
            }
          : created;
      const checked = await precheckCreate(ctx, req);
      if (checked.stored) return withServing(checked.stored);
      const answer = await jobs.runCreate(
        { request_key: requestKey, request: fingerprintOf(req), key_source: storeKeySource(source) },
        options.waitMs,
      );
      if ('done' in answer) return withServing(answer.done);
      return reply.code(202).send({
        job_id: answer.pending.jobId,
        state: answer.pending.state,
        tx_hash: await createTxHash(ctx, requestKey),
        ...(waitServing ? { serving: false } : {}),
      });
    },
  );

  app.get<{ Params: { job_id: string } }>(
    '/v1/admin/escrows/jobs/:job_id',
    { schema: jobSchema },
    async (request) => {
      const jobId = request.params.job_id;
      const job = await jobs.createEscrow.getJob(jobId);
      if (!job) {
        throw new GatewayError(
          'not_found',
          `no create job ${jobId} (unknown, or removed a day after it ended)`,
          {
            param: 'job_id',
          },
        );
      }
      const state = await job.getState();
      const failed = state === 'failed' ? decodeJobError(job.failedReason) : undefined;
      return {
        job_id: jobId,
        state,
        tx_hash: await createTxHash(ctx, job.data.request_key),
        result: state === 'completed' ? job.returnvalue : null,
        error: failed ? { code: failed.code, message: failed.message, param: failed.param } : null,
      };
    },
  );
}
