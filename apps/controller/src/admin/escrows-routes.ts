// POST /v1/admin/escrows (spec §4): create an escrow on chain and, with register=true, register it
// so the proxies claim it. The work and its guarantees are in escrow/create.ts.
import type { FastifyInstance } from 'fastify';
import type { ControllerContext } from '../controller-context.js';
import { createEscrow } from '../escrow/create.js';
import { resolveCreatorKey } from '../escrow/creator-key.js';
import { envNameSchema, errorResponses, toUint, uintSchema } from './schemas.js';

interface CreateBody {
  amount: number | string;
  model_id: string;
  chain_id: string;
  register?: boolean;
  private_key?: string;
  private_key_env?: string;
}

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
      private_key: { type: 'string', description: '64 hex characters; stored encrypted, never returned.' },
      private_key_env: {
        ...envNameSchema,
        description: 'Name of a controller env variable holding the key.',
      },
    },
  },
  response: {
    200: {
      type: 'object',
      required: ['escrow_id', 'tx_hash', 'creator', 'registered'],
      properties: {
        escrow_id: { type: 'integer' },
        tx_hash: { type: 'string' },
        creator: { type: 'string' },
        registered: { type: 'boolean' },
      },
    },
    ...errorResponses,
  },
} as const;

export async function escrowsRoutes(
  app: FastifyInstance,
  options: { ctx: ControllerContext },
): Promise<void> {
  const { ctx } = options;
  app.post<{ Body: CreateBody; Headers: { 'idempotency-key'?: string } }>(
    '/v1/admin/escrows',
    { schema: createSchema },
    async (request) => {
      const body = request.body;
      const amount = toUint(body.amount, 'amount');
      const { key, source } = resolveCreatorKey(ctx, body);
      const idempotencyKey = request.headers['idempotency-key'];
      return createEscrow(ctx, {
        amount,
        modelId: body.model_id,
        chainId: body.chain_id,
        register: body.register ?? false,
        key,
        keySource: source,
        ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
      });
    },
  );
}
