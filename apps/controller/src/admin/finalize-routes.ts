// POST /devshard/{id}/v1/finalize and POST /v1/finalize (spec §4, §3.1, §7): the finalize document
// as stored (exact integers, the same text on every call). /v1/finalize is only valid with exactly
// one registered escrow. 409 while the owner still drains (with the in-flight count) or while an
// inference is unresolved (completion_pending); never a hanging request.
import { escrowTable, GatewayError, openAIErrorSchema } from '@gonka-gateway/shared';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ControllerContext } from '../controller-context.js';
import { finalizeEscrow } from '../escrow/finalize.js';
import { errorResponses, escrowIdParams } from './schemas.js';

async function sendDocument(reply: FastifyReply, json: string): Promise<FastifyReply> {
  return reply.type('application/json; charset=utf-8').send(json);
}

export async function finalizeRoutes(
  app: FastifyInstance,
  options: { ctx: ControllerContext },
): Promise<void> {
  const { ctx } = options;
  // No 200 schema: the stored text is sent as it is (uint64 fields must not pass through a number).
  app.post<{ Params: { id: string } }>(
    '/devshard/:id/v1/finalize',
    { schema: { params: escrowIdParams, response: errorResponses } },
    async (request, reply) => sendDocument(reply, await finalizeEscrow(ctx, BigInt(request.params.id))),
  );

  app.post(
    '/v1/finalize',
    { schema: { response: { 409: openAIErrorSchema, 401: openAIErrorSchema } } },
    async (_request, reply) => {
      const rows = await escrowTable.listIds(ctx.sql);
      if (rows.length !== 1) {
        throw new GatewayError(
          'conflict',
          `POST /v1/finalize needs exactly one registered escrow; ${rows.length} are registered — use /devshard/{id}/v1/finalize`,
        );
      }
      return sendDocument(reply, await finalizeEscrow(ctx, rows[0]!));
    },
  );
}

/** Spec §4: finalize with an empty id answers 404 with an empty body (outside admin auth). */
export async function emptyIdFinalizeRoute(app: FastifyInstance): Promise<void> {
  app.post('/devshard//v1/finalize', async (_request, reply) => reply.status(404).send());
}
