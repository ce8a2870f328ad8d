// /v1/admin/devshards (spec §4, §3.1): list and show registered escrows, register an existing
// on-chain escrow (or import it inactive for a hot swap), activate/deactivate routing, and DELETE
// the local record. Choices where the spec says "not shown" are in the README's table. A register
// with `wait_until_serving` answers once a proxy replica serves the escrow (bounded; escrow/serving.ts).
// Settling is settle-routes.ts.
import { queryChainId } from '@gonka-gateway/chain';
import { escrowTable, GatewayError, openAIErrorSchema } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import type { ControllerContext } from '../controller-context.js';
import { escrowViewSchema, readEscrowViews } from '../escrow/escrow-view.js';
import { resolveCreatorKey } from '../escrow/key-fields.js';
import { inFlightCount, publishActivated, publishPoolStatus, removeFromPool } from '../escrow/pool-status.js';
import { registerEscrow } from '../escrow/register.js';
import { waitUntilServing } from '../escrow/serving.js';
import { setRoutable } from '../escrow/transitions.js';
import { SERVING_SCHEMA, WAIT_UNTIL_SERVING_SCHEMA } from './escrows-routes.js';
import { envNameSchema, errorResponses, escrowIdParams, toUint, uintSchema } from './schemas.js';

interface RegisterBody {
  escrow_id: number | string;
  private_key?: string;
  private_key_env?: string;
  active?: boolean;
  wait_until_serving?: boolean;
}

const registerBody = {
  type: 'object',
  required: ['escrow_id'],
  additionalProperties: false,
  properties: {
    escrow_id: uintSchema,
    private_key: { type: 'string', description: '64 hex characters; stored encrypted, never returned.' },
    private_key_env: envNameSchema,
    active: { type: 'boolean' },
    wait_until_serving: WAIT_UNTIL_SERVING_SCHEMA,
  },
} as const;

const viewResponse = { 200: escrowViewSchema, 201: escrowViewSchema, ...errorResponses } as const;

/** The item, plus `serving` when the register asked for wait_until_serving. */
const registeredSchema = {
  ...escrowViewSchema,
  properties: { ...escrowViewSchema.properties, serving: SERVING_SCHEMA },
} as const;
const registeredResponse = { 200: registeredSchema, 201: registeredSchema, ...errorResponses } as const;

type IdParams = { Params: { id: string } };

export async function devshardsRoutes(
  app: FastifyInstance,
  options: { ctx: ControllerContext },
): Promise<void> {
  const { ctx } = options;

  const one = async (id: bigint) => {
    const [view] = await readEscrowViews(ctx, id);
    if (!view) throw new GatewayError('escrow_not_found', `escrow ${id} is not registered`, { param: 'id' });
    return view;
  };

  app.get(
    '/v1/admin/devshards',
    {
      schema: {
        response: {
          200: {
            type: 'object',
            required: ['data'],
            properties: { data: { type: 'array', items: escrowViewSchema } },
          },
          401: openAIErrorSchema,
        },
      },
    },
    async () => ({ data: await readEscrowViews(ctx) }),
  );

  app.get<IdParams>(
    '/v1/admin/devshards/:id',
    { schema: { params: escrowIdParams, response: viewResponse } },
    async (request) => one(BigInt(request.params.id)),
  );

  const register =
    (defaultActive: boolean) =>
    async (request: { body: RegisterBody }, reply: { status(code: number): unknown }) => {
      const body = request.body;
      const escrowId = toUint(body.escrow_id, 'escrow_id');
      const { key, source } = resolveCreatorKey(ctx, body);
      const chainId = await queryChainId(ctx.chain);
      const { inserted } = await registerEscrow(ctx, {
        escrowId,
        chainId,
        keySource: source,
        creator: key.address,
        active: body.active ?? defaultActive,
      });
      reply.status(inserted ? 201 : 200);
      if (body.wait_until_serving !== true) return one(escrowId);
      const registered = await one(escrowId);
      // Only an active escrow is ever claimed (an import is inactive): nothing else is waited for.
      if (registered.state !== 'active' || !registered.active) return { ...registered, serving: false };
      const serving = await waitUntilServing(ctx, escrowId);
      return { ...(await one(escrowId)), serving };
    };

  app.post<{ Body: RegisterBody }>(
    '/v1/admin/devshards',
    {
      schema: {
        body: registerBody,
        response: registeredResponse,
      },
    },
    register(true),
  );

  app.post<{ Body: RegisterBody }>(
    '/v1/admin/devshards/import',
    {
      schema: {
        body: registerBody,
        response: registeredResponse,
      },
    },
    register(false),
  );

  app.post<IdParams>(
    '/v1/admin/devshards/:id/activate',
    { schema: { params: escrowIdParams, response: viewResponse } },
    async (request) => {
      const id = BigInt(request.params.id);
      const view = await one(id);
      if (view.state !== 'active') {
        throw new GatewayError(
          'conflict',
          `escrow ${id} is ${view.state}; only an active escrow can be routed`,
          {
            param: 'id',
          },
        );
      }
      await setRoutable(ctx.sql, id, true);
      await publishActivated(ctx, id);
      return one(id);
    },
  );

  app.post<IdParams>(
    '/v1/admin/devshards/:id/deactivate',
    {
      schema: {
        params: escrowIdParams,
        response: viewResponse,
      },
    },
    async (request) => {
      const id = BigInt(request.params.id);
      await one(id);
      await setRoutable(ctx.sql, id, false);
      // Proxies skip it at once; its owner drains and releases it on the next claim pass.
      await publishPoolStatus(ctx, id, 'inactive');
      return one(id);
    },
  );

  app.delete<IdParams & { Querystring: { force?: string } }>(
    '/v1/admin/devshards/:id',
    {
      schema: {
        params: escrowIdParams,
        querystring: { type: 'object', properties: { force: { type: 'string', enum: ['true', 'false'] } } },
        response: {
          200: {
            type: 'object',
            required: ['escrow_id', 'deleted'],
            properties: { escrow_id: { type: 'integer' }, deleted: { type: 'boolean' } },
          },
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const id = BigInt(request.params.id);
      const view = await one(id);
      const force = request.query.force === 'true';
      if (!force) {
        const inFlight = await inFlightCount(ctx, id);
        if (inFlight > 0) {
          throw new GatewayError(
            'conflict',
            `escrow ${id} has ${inFlight} requests in flight; retry later or use ?force=true`,
            {
              param: 'id',
            },
          );
        }
        if (view.state !== 'settled' && view.active) {
          throw new GatewayError(
            'conflict',
            `escrow ${id} is ${view.state} and still routed; settle or deactivate it first, or use ?force=true`,
            { param: 'id' },
          );
        }
      }
      await escrowTable.deleteEscrow(ctx.sql, id);
      await removeFromPool(ctx, id, view.model_id);
      return { escrow_id: Number(id), deleted: true };
    },
  );
}
