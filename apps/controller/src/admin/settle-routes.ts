// Settling escrows over the admin API (spec §4, §3.1 "finalized → settled"; apps/controller README
// "Settle" and "Batch settle"). The single settle enqueues the escrow's settle job and answers 202;
// the batch settles many, streaming one NDJSON line per escrow as it ends (escrow/settle-batch.ts).
// Both check before anything is drained or finalized: the key variable is set and usable, and the
// settler can pay the settle tx fee (escrow/settle-fee.ts) — else 402 naming the shortfall, or the
// batch line `insufficient_funds`. `force` cuts in-flight requests instead of waiting for them.

import { Readable } from 'node:stream';
import { ChainError, type PrivateKey, privateKeyFromEnv } from '@gonka-gateway/chain';
import { GatewayError, openAIErrorSchema } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import type { BatchSettleLine, SettleLine } from '../admin-api.js';
import { readFromNode } from '../chain/node-read.js';
import type { ControllerContext } from '../controller-context.js';
import { readEscrowViews } from '../escrow/escrow-view.js';
import { runSettleBatch, type SettleFilter, selectEscrows } from '../escrow/settle-batch.js';
import {
  describeShortfall,
  SettleFeeBudget,
  type SettleFeeShortfall,
  settleFeeShortfall,
} from '../escrow/settle-fee.js';
import type { ControllerJobs } from '../jobs/workers.js';
import { envNameSchema, errorResponses, escrowIdParams, toUint } from './schemas.js';

/** Escrows of one batch settled at once, unless the request says otherwise (BATCH_SIZE_MAX at most). */
export const BATCH_SIZE_DEFAULT = 4;
export const BATCH_SIZE_MAX = 16;
/** Ids one batch may list (a filter selects any number). */
const IDS_MAX = 1_000;

const FORCE_SCHEMA = {
  type: 'boolean',
  default: false,
  description:
    'Cut requests in flight instead of waiting for them; inferences still without Finish or timeout are billed at their reservation.',
} as const;

/** The 402 body: the OpenAI error fields plus the shortfall in ngonka (decimal strings). */
const insufficientFundsSchema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['message', 'type', 'param', 'code', 'address', 'required', 'balance', 'shortfall'],
      properties: {
        ...openAIErrorSchema.properties.error.properties,
        address: { type: 'string', description: 'The settler (the key of private_key_env).' },
        required: { type: 'string', description: 'The settle tx fee, ngonka.' },
        balance: { type: 'string', description: 'Its spendable balance, ngonka.' },
        shortfall: { type: 'string', description: 'required − balance, ngonka.' },
      },
    },
  },
} as const;

function insufficientFundsBody(short: SettleFeeShortfall) {
  const error = new GatewayError('insufficient_funds', describeShortfall(short), {
    param: 'private_key_env',
  });
  return {
    error: {
      ...error.toBody().error,
      address: short.address,
      required: short.required.toString(),
      balance: short.balance.toString(),
      shortfall: short.shortfall.toString(),
    },
  };
}

/** The key of a controller variable, or a 400 naming `private_key_env` (nothing has happened yet). */
function settlerKey(ctx: ControllerContext, name: string): PrivateKey {
  const value = ctx.env[name];
  if (value === undefined || value.trim() === '') {
    throw new GatewayError('invalid_request', `environment variable ${name} is not set on the controller`, {
      param: 'private_key_env',
    });
  }
  try {
    return privateKeyFromEnv(ctx.env, name);
  } catch {
    throw new GatewayError(
      'invalid_request',
      `environment variable ${name} does not hold a usable private key`,
      {
        param: 'private_key_env',
      },
    );
  }
}

interface BatchBody {
  escrow_ids?: string[];
  filter?: SettleFilter;
  batch_size?: number;
  force?: boolean;
  private_key_env: string;
}

const batchBody = {
  type: 'object',
  required: ['private_key_env'],
  additionalProperties: false,
  properties: {
    escrow_ids: {
      type: 'array',
      minItems: 1,
      maxItems: IDS_MAX,
      items: { type: 'string', pattern: '^[1-9][0-9]{0,19}$' },
      description: 'Escrow ids as decimal strings; or `filter`, not both.',
    },
    filter: {
      type: 'object',
      additionalProperties: false,
      properties: {
        model: { type: 'string', minLength: 1, maxLength: 256 },
        inactive: { type: 'boolean', description: 'Escrows whose routing flag is off.' },
        depleted: {
          type: 'boolean',
          description: 'Escrows the balance check marked depleted or nonce_limited.',
        },
      },
      description:
        'Unsettled escrows: `model` narrows; `inactive` and `depleted` select, either one enough. At least one must be set.',
    },
    batch_size: { type: 'integer', minimum: 1, maximum: BATCH_SIZE_MAX, default: BATCH_SIZE_DEFAULT },
    force: FORCE_SCHEMA,
    private_key_env: envNameSchema,
  },
} as const;

export async function settleRoutes(
  app: FastifyInstance,
  options: { ctx: ControllerContext; jobs: ControllerJobs },
): Promise<void> {
  const { ctx, jobs } = options;
  // Batches outlive their requests; a closing controller stops them and waits for what runs.
  const closing = new AbortController();
  const running = new Set<Promise<unknown>>();
  app.addHook('onClose', async () => {
    closing.abort();
    await Promise.all(running);
  });

  app.post<{ Params: { id: string }; Body: { private_key_env: string; force?: boolean } }>(
    '/v1/admin/devshards/:id/settle',
    {
      schema: {
        params: escrowIdParams,
        body: {
          type: 'object',
          required: ['private_key_env'],
          additionalProperties: false,
          properties: { private_key_env: envNameSchema, force: FORCE_SCHEMA },
        },
        response: {
          202: {
            type: 'object',
            required: ['escrow_id', 'job_id', 'state'],
            properties: {
              escrow_id: { type: 'integer' },
              job_id: { type: 'string' },
              state: { type: 'string' },
            },
          },
          402: insufficientFundsSchema,
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const id = BigInt(request.params.id);
      const [view] = await readEscrowViews(ctx, id);
      if (!view)
        throw new GatewayError('escrow_not_found', `escrow ${id} is not registered`, { param: 'id' });
      const name = request.body.private_key_env;
      const key = settlerKey(ctx, name);
      // Another key than the creator's is refused by the job (settle.ts), which says why.
      if (view.state !== 'settled' && key.address === view.creator) {
        // While the node cannot answer the check is left to the settle job, which makes it again
        // before it finalizes anything (settle.ts) and waits for the chain like every other step.
        const short = await settleFeeShortfall(ctx, key.address).catch((err: unknown) => {
          if (err instanceof ChainError) return undefined;
          throw err;
        });
        if (short) return reply.status(402).send(insufficientFundsBody(short));
      }
      const jobId = await jobs.enqueueSettle(id, name, { force: request.body.force === true, now: true });
      return reply.status(202).send({ escrow_id: Number(id), job_id: jobId, state: view.state });
    },
  );

  app.post<{ Body: BatchBody }>(
    '/v1/admin/devshards/settle',
    {
      schema: {
        description:
          'Settles many escrows, `batch_size` at a time. Answers 200 `application/x-ndjson`: one line per escrow as it ends — `{escrow_id, ok: true, tx_hash, refund}` or `{escrow_id, ok: false, error: {code, message}}` — then `{summary: {total, settled, already_settled, failed, codes}}`. The settles go on when the client leaves.',
        body: batchBody,
        response: { ...errorResponses },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const ids = await batchIds(ctx, body);
      const key = settlerKey(ctx, body.private_key_env);
      // One settler for the whole batch: its balance is read once and each settle takes its fee.
      const fees = await readFromNode('the settle fee and the settler balance', () =>
        SettleFeeBudget.read(ctx, key.address),
      );
      const out = new Readable({ read() {} });
      const write = (value: BatchSettleLine) => {
        if (!out.destroyed) out.push(`${JSON.stringify(value)}\n`);
      };
      const work = runSettleBatch(
        ctx,
        jobs,
        {
          ids,
          batchSize: body.batch_size ?? BATCH_SIZE_DEFAULT,
          force: body.force === true,
          privateKeyEnv: body.private_key_env,
          key,
          fees,
        },
        (line: SettleLine) => write(line),
        closing.signal,
      )
        .then((summary) => write({ summary }))
        .catch((err: Error) => {
          ctx.logger.error({ err: err.message }, 'batch settle stopped');
          write({ error: { code: 'internal_error', message: `the batch stopped: ${err.message}` } });
        })
        .finally(() => {
          if (!out.destroyed) out.push(null);
          running.delete(work);
        });
      running.add(work);
      return reply.status(200).type('application/x-ndjson; charset=utf-8').send(out);
    },
  );
}

/** The batch's escrow ids; every input mistake is a 400 naming the field, before anything starts. */
async function batchIds(ctx: ControllerContext, body: BatchBody): Promise<bigint[]> {
  if (body.escrow_ids !== undefined && body.filter !== undefined) {
    throw new GatewayError('invalid_request', 'send escrow_ids or filter, not both', { param: 'filter' });
  }
  if (body.escrow_ids !== undefined) {
    const seen = new Set<bigint>();
    return body.escrow_ids.map((raw, i) => {
      const id = toUint(raw, `escrow_ids[${i}]`);
      if (seen.has(id)) {
        throw new GatewayError('invalid_request', `escrow_ids[${i}]: escrow ${id} is listed twice`, {
          param: `escrow_ids[${i}]`,
        });
      }
      seen.add(id);
      return id;
    });
  }
  const filter = body.filter;
  if (filter === undefined) {
    throw new GatewayError('invalid_request', 'name the escrows: escrow_ids or filter', {
      param: 'escrow_ids',
    });
  }
  if (filter.model === undefined && filter.inactive !== true && filter.depleted !== true) {
    throw new GatewayError(
      'invalid_request',
      'filter selects every escrow: set model, inactive: true or depleted: true',
      { param: 'filter' },
    );
  }
  return selectEscrows(ctx, filter);
}
