// GET /v1/requests/{request_id}: one chat request as the usage ledger recorded it, with every attempt
// (participant, timings, deadlines hit, outcome, burned nonces). Behind the admin key although the
// path is not under /v1/admin; the proxies forward it here. The proxy writes the row from its usage
// stream a few hundred ms after answering, so a request asked about at once may still be a 404.
import { GatewayError } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import type { ControllerContext } from '../controller-context.js';
import { requestRecord } from '../usage/request-record.js';
import { errorResponses } from './schemas.js';

const decimalOrNull = { type: ['string', 'null'], pattern: '^[0-9]+$' } as const;
const optionalMs = { type: 'number', description: 'ms since the request started' } as const;

const attemptSchema = {
  type: 'object',
  additionalProperties: true,
  properties: {
    escrow_id: { type: 'string' },
    nonce: { type: 'string' },
    participant: { type: 'string' },
    hedge: { type: 'boolean', description: 'Started by a deadline or failure of an earlier attempt.' },
    started_ms: optionalMs,
    receipt_ms: optionalMs,
    first_token_ms: optionalMs,
    ended_ms: optionalMs,
    deadlines_hit: {
      type: 'array',
      items: { type: 'string', enum: ['receipt', 'first_token', 'stall', 'hard'] },
    },
    outcome: { type: 'string', enum: ['served', 'failed', 'cancelled', 'deterministic_error'] },
    error: { type: 'string' },
    output_tokens: { type: 'integer' },
    cost: { type: 'string', description: 'ngonka at answer time' },
    cost_final: { type: 'boolean' },
    burned_nonces: {
      type: 'array',
      items: { type: 'string' },
      description: 'Nonces spent fee-only to skip quarantined or already-tried participants.',
    },
  },
} as const;

const recordSchema = {
  type: 'object',
  required: ['request_id', 'key_id', 'model', 'status', 'attempts'],
  properties: {
    request_id: { type: 'string' },
    key_id: { type: 'string', description: 'Stored key id, env or admin.' },
    model: { type: 'string' },
    escrow_id: decimalOrNull,
    nonces: { type: 'array', items: { type: 'string' } },
    status: { type: 'integer' },
    input_tokens: { type: 'integer' },
    output_tokens: { type: 'integer' },
    cost: { ...decimalOrNull, description: 'ngonka; null when no nonce was spent' },
    cost_final: { type: 'boolean' },
    total_ms: { type: 'integer' },
    ttft_ms: { type: ['integer', 'null'] },
    replica_id: { type: 'string' },
    at: { type: 'string', description: 'When the proxy answered.' },
    created_at: { type: 'string', description: 'When the ledger row was written.' },
    attempts: {
      type: ['array', 'null'],
      items: attemptSchema,
      description: 'In the order they started; null when the proxy recorded none.',
    },
  },
} as const;

export async function requestsRoutes(
  app: FastifyInstance,
  options: { ctx: ControllerContext },
): Promise<void> {
  const { sql } = options.ctx;
  app.get<{ Params: { request_id: string } }>(
    '/v1/requests/:request_id',
    {
      schema: {
        params: {
          type: 'object',
          required: ['request_id'],
          properties: { request_id: { type: 'string', minLength: 1, maxLength: 256 } },
        },
        response: { 200: recordSchema, ...errorResponses },
      },
    },
    async (request) => {
      const id = request.params.request_id;
      const record = await requestRecord(sql, id);
      if (record === undefined) {
        throw new GatewayError(
          'not_found',
          `request ${id} is not in the usage ledger (its row is written shortly after the answer)`,
          { param: 'request_id' },
        );
      }
      return record;
    },
  );
}
