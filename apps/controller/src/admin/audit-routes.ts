// GET /v1/admin/audit: the audit log of every mutating admin call, newest first, paged
// by id. Rows were redacted when written (admin/redact.ts), so nothing here can hold a secret.
import { openAIErrorSchema } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import type { ControllerContext } from '../controller-context.js';

const entrySchema = {
  type: 'object',
  required: ['id', 'at', 'actor', 'action', 'status_code'],
  properties: {
    id: { type: 'string' },
    at: { type: 'string' },
    actor: { type: 'string' },
    action: { type: 'string' },
    target: { type: ['string', 'null'] },
    request: {},
    status_code: { type: 'integer' },
  },
} as const;

export async function auditRoutes(app: FastifyInstance, options: { ctx: ControllerContext }): Promise<void> {
  const { sql } = options.ctx;
  app.get<{ Querystring: { limit?: string; before?: string } }>(
    '/v1/admin/audit',
    {
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            limit: { type: 'string', pattern: '^([1-9][0-9]{0,2}|1000)$' },
            before: { type: 'string', pattern: '^[1-9][0-9]{0,18}$' },
          },
        },
        response: {
          200: {
            type: 'object',
            required: ['data'],
            properties: { data: { type: 'array', items: entrySchema } },
          },
          400: openAIErrorSchema,
          401: openAIErrorSchema,
        },
      },
    },
    async (request) => {
      const limit = Number(request.query.limit ?? '100');
      const before = request.query.before ?? null;
      const rows = await sql<
        {
          id: string;
          at: Date;
          actor: string;
          action: string;
          target: string | null;
          request: unknown;
          status_code: number;
        }[]
      >`select id::text as id, at, actor, action, target, request, status_code from admin_audit_log
         where ${before}::bigint is null or id < ${before}::bigint
         order by id desc limit ${limit}`;
      return { data: rows.map((r) => ({ ...r, at: new Date(r.at).toISOString() })) };
    },
  );
}
