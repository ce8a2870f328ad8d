// /v1/admin/usage (docs/keys-and-usage.md, "The usage ledger"): ledger totals with filters and
// grouping, the records as JSON or CSV, the reconciliation of one finalized escrow against its
// finalize document, and the ledger's knobs (retention, how many keys get their own spend series).
// The queries are in usage/.
import { GatewayError } from '@gonka-gateway/shared';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { UsageTotals } from '../admin-api.js';
import type { ControllerContext } from '../controller-context.js';
import { applyCostCorrections } from '../keys/key-store.js';
import { reconcileEscrow } from '../usage/escrow-reconciliation.js';
import {
  GROUP_BY,
  type GroupBy,
  type LedgerFilter,
  ledgerRecords,
  ledgerTotals,
  RECORD_COLUMNS,
  toCsv,
} from '../usage/ledger-query.js';
import { readUsageSettings, type UsageSettings, writeUsageSettings } from '../usage/usage-retention.js';
import { errorResponses, escrowIdParams } from './schemas.js';

const filterProperties = {
  key: { type: 'string', pattern: '^([1-9][0-9]{0,18}|env|admin)$', description: 'Key id, env or admin.' },
  model: { type: 'string', minLength: 1, maxLength: 256 },
  escrow: { type: 'string', pattern: '^[1-9][0-9]{0,19}$' },
  from: { type: 'string', format: 'date-time', description: 'Inclusive.' },
  to: { type: 'string', format: 'date-time', description: 'Exclusive.' },
  format: { type: 'string', enum: ['json', 'csv'] },
} as const;

const totalsSchema = {
  type: 'object',
  properties: {
    group: { type: ['string', 'null'] },
    requests: { type: 'integer' },
    input_tokens: { type: 'integer' },
    output_tokens: { type: 'integer' },
    cost_ngonka: { type: 'string' },
    errors: { type: 'integer' },
    unfinalized: { type: 'integer' },
  },
} as const;

const TOTAL_COLUMNS = [
  'group',
  'requests',
  'input_tokens',
  'output_tokens',
  'cost_ngonka',
  'errors',
  'unfinalized',
];

type FilterQuery = LedgerFilter & { format?: 'json' | 'csv' };

function checkRange(q: FilterQuery): void {
  if (q.from !== undefined && q.to !== undefined && Date.parse(q.from) >= Date.parse(q.to)) {
    throw new GatewayError('invalid_request', 'from must be before to', { param: 'from' });
  }
}

function filterOf(q: FilterQuery): LedgerFilter {
  const f: LedgerFilter = {};
  for (const k of ['key', 'model', 'escrow', 'from', 'to'] as const) if (q[k] !== undefined) f[k] = q[k];
  return f;
}

function sendCsv(reply: FastifyReply, name: string, body: string) {
  return reply
    .header('content-type', 'text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="${name}.csv"`)
    .send(body);
}

export async function usageRoutes(app: FastifyInstance, options: { ctx: ControllerContext }): Promise<void> {
  const { sql } = options.ctx;

  app.get<{ Querystring: FilterQuery & { group_by?: GroupBy } }>(
    '/v1/admin/usage',
    {
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { ...filterProperties, group_by: { type: 'string', enum: GROUP_BY } },
        },
        response: {
          200: {
            type: 'object',
            properties: {
              group_by: { type: ['string', 'null'] },
              data: { type: 'array', items: totalsSchema },
              total: totalsSchema,
            },
          },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const q = request.query;
      checkRange(q);
      const result = await ledgerTotals(sql, filterOf(q), q.group_by);
      if (q.format === 'csv') {
        const rows = q.group_by === undefined ? [result.total] : result.data;
        return sendCsv(reply, 'usage-totals', toCsv(TOTAL_COLUMNS, rows as never));
      }
      const totals: UsageTotals = { group_by: q.group_by ?? null, ...result };
      return totals;
    },
  );

  app.get<{ Querystring: FilterQuery & { limit?: number } }>(
    '/v1/admin/usage/records',
    {
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            ...filterProperties,
            limit: { type: 'integer', minimum: 1, maximum: 100_000, default: 10_000 },
          },
        },
        response: {
          200: {
            type: 'object',
            properties: { data: { type: 'array', items: { type: 'object', additionalProperties: true } } },
          },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const q = request.query;
      checkRange(q);
      const rows = await ledgerRecords(sql, filterOf(q), q.limit ?? 10_000);
      if (q.format === 'csv') return sendCsv(reply, 'usage-records', toCsv(RECORD_COLUMNS, rows));
      return { data: rows };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/admin/usage/escrows/:id/reconciliation',
    {
      schema: {
        params: escrowIdParams,
        response: {
          200: {
            type: 'object',
            properties: {
              escrow_id: { type: 'string' },
              state: { type: 'string' },
              finalize_nonce: { type: 'string' },
              hosts_cost_ngonka: { type: 'string' },
              fees_ngonka: { type: 'string' },
              ledger_cost_ngonka: { type: 'string' },
              ledger_requests: { type: 'integer' },
              difference_ngonka: { type: 'string' },
              matches: { type: 'boolean' },
              corrected_records: { type: 'integer' },
              explaining_records: { type: 'array', items: { type: 'object', additionalProperties: true } },
              unrecorded_inferences: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: { inference_id: { type: 'string' }, cost_ngonka: { type: 'string' } },
                },
              },
            },
          },
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { id } = request.params;
      const outcome = await reconcileEscrow(sql, options.ctx.store, id);
      if (outcome.kind === 'unknown_escrow') {
        throw new GatewayError('escrow_not_found', `escrow ${id} is not registered`, { param: 'id' });
      }
      if (outcome.kind === 'not_finalized') {
        throw new GatewayError(
          'conflict',
          `escrow ${id} is ${outcome.state}: it has no finalize document yet`,
          {
            param: 'id',
          },
        );
      }
      await applyCostCorrections(options.ctx, outcome.corrections);
      return outcome.value;
    },
  );

  const settingsSchema = {
    type: 'object',
    properties: { retention_days: { type: 'integer' }, metrics_top_keys: { type: 'integer' } },
  } as const;
  app.get(
    '/v1/admin/usage/settings',
    { schema: { response: { 200: settingsSchema, ...errorResponses } } },
    () => readUsageSettings(sql),
  );
  app.post<{ Body: Partial<UsageSettings> }>(
    '/v1/admin/usage/settings',
    {
      schema: {
        body: {
          type: 'object',
          additionalProperties: false,
          minProperties: 1,
          properties: {
            retention_days: {
              type: 'integer',
              minimum: 0,
              maximum: 36_500,
              description: '0 = keep everything.',
            },
            metrics_top_keys: { type: 'integer', minimum: 0, maximum: 100 },
          },
        },
        response: { 200: settingsSchema, ...errorResponses },
      },
    },
    (request) => writeUsageSettings(sql, request.body),
  );
}
