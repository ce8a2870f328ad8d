// /v1/admin/hosts: the fleet-wide serving health of each (participant, model) the proxies keep in
// Redis (packages/shared redis/host-health.ts), and the operator's lift of a quarantine. The
// controller only reads the records and lifts; the proxies write them.
import {
  GatewayError,
  HOST_COUNTERS,
  HOST_HEALTH_STATES,
  type HostHealthRecord,
  liftQuarantine,
  readHostHealth,
} from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import type { HostView } from '../admin-api.js';
import type { ControllerContext } from '../controller-context.js';
import { errorResponses } from './schemas.js';

const nullableTime = { type: ['string', 'null'], description: 'ISO time, or null for never.' } as const;
const nullableNumber = { type: ['number', 'null'] } as const;

const hostSchema = {
  type: 'object',
  required: ['participant', 'model', 'state', 'counters'],
  properties: {
    participant: { type: 'string' },
    model: { type: 'string' },
    state: {
      type: 'string',
      enum: HOST_HEALTH_STATES,
      description: 'A quarantine whose quarantined_until has passed shows as probation.',
    },
    quarantined_until: nullableTime,
    times_quarantined: { type: 'integer' },
    consecutive_failures: { type: 'integer' },
    last_error: { type: ['string', 'null'] },
    last_error_at: nullableTime,
    receipt_ms: nullableNumber,
    first_token_ms: nullableNumber,
    tokens_per_s: nullableNumber,
    counters: {
      type: 'object',
      properties: Object.fromEntries(HOST_COUNTERS.map((c) => [c, { type: 'integer' }])),
    },
    updated_at: nullableTime,
    lifted_at: nullableTime,
  },
} as const;

/**
 * The participant in the path is `:id` because the audit hook (admin-auth.ts) records `params.id` as
 * an audit row's target.
 */
const participantParams = {
  type: 'object',
  required: ['id'],
  properties: {
    id: {
      type: 'string',
      minLength: 1,
      maxLength: 256,
      pattern: '^[^|\\s]+$',
      description: 'Participant address.',
    },
  },
} as const;

const iso = (ms: number): string | null => (ms > 0 ? new Date(ms).toISOString() : null);

/** A record as the operator sees it: a quarantine past its end is probation, as the proxies treat it. */
export function hostView(r: HostHealthRecord, nowMs: number): HostView {
  const expired = r.state === 'quarantined' && r.quarantinedUntilMs <= nowMs;
  return {
    participant: r.participant,
    model: r.model,
    state: expired ? 'probation' : r.state,
    quarantined_until: iso(r.quarantinedUntilMs),
    times_quarantined: r.timesQuarantined,
    consecutive_failures: r.consecutiveFailures,
    last_error: r.lastError ?? null,
    last_error_at: iso(r.lastErrorAtMs),
    receipt_ms: r.receiptMs ?? null,
    first_token_ms: r.firstTokenMs ?? null,
    tokens_per_s: r.tokensPerSecond ?? null,
    counters: r.counters,
    updated_at: iso(r.updatedAtMs),
    lifted_at: iso(r.liftedAtMs),
  };
}

const byModelThenParticipant = (a: HostHealthRecord, b: HostHealthRecord) =>
  a.model < b.model ? -1 : a.model > b.model ? 1 : a.participant < b.participant ? -1 : 1;

export async function hostsRoutes(app: FastifyInstance, options: { ctx: ControllerContext }): Promise<void> {
  const { redis, keys } = options.ctx;

  // The lift takes an optional body: none, or an empty one whatever its content type, reads as `{}`
  // (the schema then checks one shape); anything else must be JSON. Only this plugin's routes parse
  // bodies this way.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
    const text = String(body).trim();
    if (text === '') return done(null, {});
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new GatewayError('invalid_json', 'request body is not valid JSON'), undefined);
    }
  });

  app.get(
    '/v1/admin/hosts',
    {
      schema: {
        response: {
          200: {
            type: 'object',
            required: ['data'],
            properties: { data: { type: 'array', items: hostSchema } },
          },
          ...errorResponses,
        },
      },
    },
    async () => {
      const records = await readHostHealth(redis, keys);
      const now = Date.now();
      return { data: records.sort(byModelThenParticipant).map((r) => hostView(r, now)) };
    },
  );

  app.post<{ Params: { id: string }; Body: { model?: string } }>(
    '/v1/admin/hosts/:id/lift',
    {
      // A request without a body reaches validation with none at all.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        params: participantParams,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            model: {
              type: 'string',
              minLength: 1,
              maxLength: 256,
              description: 'Lift this model only; every model of the participant when absent.',
            },
          },
        },
        response: {
          200: { type: 'object', required: ['lifted'], properties: { lifted: { type: 'integer' } } },
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const participant = request.params.id;
      const model = request.body.model;
      const lifted = await liftQuarantine(redis, keys, participant, model);
      if (lifted === 0) {
        throw new GatewayError(
          'not_found',
          model === undefined
            ? `no host health record for participant ${participant}`
            : `no host health record for participant ${participant} and model ${model}`,
          { param: model === undefined ? 'id' : 'model' },
        );
      }
      request.log.info({ participant, model, lifted }, 'host quarantine lifted');
      return { lifted };
    },
  );
}
