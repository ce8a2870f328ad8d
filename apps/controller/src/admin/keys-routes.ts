// /v1/admin/keys (docs/keys-and-usage.md, "Keys"): create a virtual API key (the key is in this one
// answer only), list and read keys (never the key: id, name, a short prefix, limits, spend in the
// current period, last use), change limits (PATCH; null clears a limit), revoke, rotate (a new key
// for the same id and spend). DEVSHARD_API_KEYS appear as one read-only entry `env`. Audit rows
// come from admin-auth.ts and hold request bodies only, which carry no secret; the keys themselves
// live in keys/key-store.ts.
import { BUDGET_PERIODS, GatewayError } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import type { KeyView, KeyWithSecret } from '../admin-api.js';
import type { ControllerContext } from '../controller-context.js';
import {
  announceKeyChange,
  ENV_KEY_ID,
  envKeyView,
  keyViews,
  MAX_BUDGET_NGONKA,
  newSecret,
  readKeyRows,
} from '../keys/key-store.js';
import { errorResponses, toUint, uintSchema } from './schemas.js';

interface KeyBody {
  name?: string;
  models?: string[] | null;
  budget_ngonka?: number | string | null;
  budget_period?: (typeof BUDGET_PERIODS)[number];
  rpm?: number | null;
  tpm?: number | null;
  max_concurrent?: number | null;
  expires_at?: string | null;
  metadata?: Record<string, unknown>;
}

const nullable = <T extends object>(s: T) => ({ anyOf: [s, { type: 'null' }] });
const limit = (description: string) =>
  nullable({ type: 'integer', minimum: 1, maximum: 1_000_000_000, description });

const limitProperties = {
  models: nullable({
    type: 'array',
    minItems: 1,
    maxItems: 256,
    uniqueItems: true,
    items: { type: 'string', minLength: 1, maxLength: 256 },
    description: 'Models the key may use; null or absent = every model the access mode allows.',
  }),
  budget_ngonka: nullable({ ...uintSchema, description: 'Spend limit per budget_period in ngonka.' }),
  budget_period: { type: 'string', enum: BUDGET_PERIODS, description: 'UTC calendar period; default total.' },
  rpm: limit('Requests per minute (sliding 60 s).'),
  tpm: limit('Tokens per minute: input estimate + max_tokens of each request (sliding 60 s).'),
  max_concurrent: limit('Requests in flight at once.'),
  expires_at: nullable({ type: 'string', format: 'date-time' }),
  metadata: { type: 'object', description: 'Free-form labels (at most 4 KiB as JSON).' },
} as const;

const keyViewSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    prefix: { type: 'string' },
    read_only: { type: 'boolean' },
    status: { type: 'string' },
    models: { anyOf: [{ type: 'array', items: { type: 'string' } }, { type: 'null' }] },
    budget_ngonka: { type: ['string', 'null'] },
    budget_period: { type: 'string' },
    rpm: { type: ['integer', 'null'] },
    tpm: { type: ['integer', 'null'] },
    max_concurrent: { type: ['integer', 'null'] },
    expires_at: { type: ['string', 'null'] },
    metadata: { type: 'object', additionalProperties: true },
    period: {
      type: 'object',
      properties: { start: { type: 'string' }, end: { type: ['string', 'null'] } },
    },
    spend_ngonka: { type: 'string' },
    budget_remaining_ngonka: { type: ['string', 'null'] },
    last_used_at: { type: ['string', 'null'] },
    created_at: { type: ['string', 'null'] },
    rotated_at: { type: ['string', 'null'] },
    revoked_at: { type: ['string', 'null'] },
  },
} as const;

const withSecret = {
  type: 'object',
  properties: { ...keyViewSchema.properties, key: { type: 'string', description: 'Shown once.' } },
} as const;

const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', pattern: '^([1-9][0-9]{0,18}|env)$' } },
} as const;

function budgetOf(value: number | string | null | undefined): string | null | undefined {
  if (value === undefined || value === null) return value;
  const n = toUint(value, 'budget_ngonka');
  if (n > MAX_BUDGET_NGONKA) {
    throw new GatewayError('invalid_request', `budget_ngonka must be at most ${MAX_BUDGET_NGONKA}`, {
      param: 'budget_ngonka',
    });
  }
  return n.toString();
}

function checkBody(body: KeyBody): void {
  if (body.metadata !== undefined && JSON.stringify(body.metadata).length > 4096) {
    throw new GatewayError('invalid_request', 'metadata must be at most 4 KiB as JSON', {
      param: 'metadata',
    });
  }
  if (typeof body.expires_at === 'string' && Number.isNaN(Date.parse(body.expires_at))) {
    throw new GatewayError('invalid_request', 'expires_at must be an RFC 3339 date-time', {
      param: 'expires_at',
    });
  }
}

export async function keysRoutes(
  app: FastifyInstance,
  options: { ctx: ControllerContext; envKeyDigests: readonly Buffer[] },
): Promise<void> {
  const { ctx } = options;
  const { sql } = ctx;

  const one = async (id: string): Promise<KeyView> => {
    if (id === ENV_KEY_ID) return envKeyView(ctx, options.envKeyDigests);
    const [view] = await keyViews(ctx, await readKeyRows(ctx, id));
    if (!view) throw new GatewayError('not_found', `no API key ${id}`, { param: 'id' });
    return view;
  };
  const writable = (id: string) => {
    if (id === ENV_KEY_ID) {
      throw new GatewayError('forbidden', 'DEVSHARD_API_KEYS are read-only here; change the environment', {
        param: 'id',
      });
    }
  };

  app.post<{ Body: KeyBody & { name: string } }>(
    '/v1/admin/keys',
    {
      schema: {
        body: {
          type: 'object',
          required: ['name'],
          additionalProperties: false,
          properties: { name: { type: 'string', minLength: 1, maxLength: 128 }, ...limitProperties },
        },
        response: { 201: withSecret, ...errorResponses },
      },
    },
    async (request, reply) => {
      const b = request.body;
      checkBody(b);
      const budget = budgetOf(b.budget_ngonka) ?? null;
      const secret = newSecret();
      const [row] = await sql<{ id: string }[]>`
        insert into api_keys (name, key_hash, display_prefix, models, budget_ngonka, budget_period, rpm, tpm,
                              max_concurrent, expires_at, metadata)
        values (${b.name}, ${secret.hash}, ${secret.prefix}, ${b.models ? sql.json(b.models) : null}, ${budget},
                ${b.budget_period ?? 'total'}, ${b.rpm ?? null}, ${b.tpm ?? null}, ${b.max_concurrent ?? null},
                ${b.expires_at ?? null}, ${sql.json((b.metadata ?? {}) as never)})
        returning id::text as id`;
      await announceKeyChange(ctx);
      const created: KeyWithSecret = { ...(await one(row!.id)), key: secret.key };
      return reply.status(201).send(created);
    },
  );

  app.get(
    '/v1/admin/keys',
    {
      schema: {
        response: {
          200: { type: 'object', properties: { data: { type: 'array', items: keyViewSchema } } },
          ...errorResponses,
        },
      },
    },
    async () => {
      const stored = await keyViews(ctx, await readKeyRows(ctx));
      const env = options.envKeyDigests.length > 0 ? [await envKeyView(ctx, options.envKeyDigests)] : [];
      return { data: [...env, ...stored] };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/admin/keys/:id',
    { schema: { params: idParams, response: { 200: keyViewSchema, ...errorResponses } } },
    async (request) => one(request.params.id),
  );

  app.patch<{ Params: { id: string }; Body: KeyBody }>(
    '/v1/admin/keys/:id',
    {
      schema: {
        params: idParams,
        body: {
          type: 'object',
          additionalProperties: false,
          minProperties: 1,
          properties: { name: { type: 'string', minLength: 1, maxLength: 128 }, ...limitProperties },
        },
        response: { 200: keyViewSchema, ...errorResponses },
      },
    },
    async (request) => {
      const { id } = request.params;
      writable(id);
      const b = request.body;
      checkBody(b);
      const budget = budgetOf(b.budget_ngonka);
      const has = (k: keyof KeyBody) => Object.hasOwn(b, k);
      const updated = await sql`
        update api_keys set
          name = case when ${has('name')} then ${b.name ?? null}::text else name end,
          models = case when ${has('models')} then ${b.models ? sql.json(b.models) : null}::jsonb else models end,
          budget_ngonka = case when ${has('budget_ngonka')} then ${budget ?? null}::numeric else budget_ngonka end,
          budget_period = case when ${has('budget_period')} then ${b.budget_period ?? null}::text else budget_period end,
          rpm = case when ${has('rpm')} then ${b.rpm ?? null}::int else rpm end,
          tpm = case when ${has('tpm')} then ${b.tpm ?? null}::int else tpm end,
          max_concurrent = case when ${has('max_concurrent')} then ${b.max_concurrent ?? null}::int else max_concurrent end,
          expires_at = case when ${has('expires_at')} then ${b.expires_at ?? null}::timestamptz else expires_at end,
          metadata = case when ${has('metadata')} then ${sql.json((b.metadata ?? {}) as never)}::jsonb else metadata end,
          updated_at = now()
        where id = ${id}::bigint
        returning 1`;
      if (updated.length === 0) throw new GatewayError('not_found', `no API key ${id}`, { param: 'id' });
      await announceKeyChange(ctx);
      return one(id);
    },
  );

  app.post<{ Params: { id: string } }>(
    '/v1/admin/keys/:id/revoke',
    { schema: { params: idParams, response: { 200: keyViewSchema, ...errorResponses } } },
    async (request) => {
      const { id } = request.params;
      writable(id);
      const done = await sql`
        update api_keys set revoked_at = coalesce(revoked_at, now()), updated_at = now()
        where id = ${id}::bigint returning 1`;
      if (done.length === 0) throw new GatewayError('not_found', `no API key ${id}`, { param: 'id' });
      await announceKeyChange(ctx);
      return one(id);
    },
  );

  app.post<{ Params: { id: string } }>(
    '/v1/admin/keys/:id/rotate',
    { schema: { params: idParams, response: { 200: withSecret, ...errorResponses } } },
    async (request) => {
      const { id } = request.params;
      writable(id);
      const secret = newSecret();
      const [row] = await sql<{ revoked: boolean }[]>`
        update api_keys set key_hash = case when revoked_at is null then ${secret.hash} else key_hash end,
               display_prefix = case when revoked_at is null then ${secret.prefix} else display_prefix end,
               rotated_at = case when revoked_at is null then now() else rotated_at end, updated_at = now()
        where id = ${id}::bigint returning revoked_at is not null as revoked`;
      if (!row) throw new GatewayError('not_found', `no API key ${id}`, { param: 'id' });
      if (row.revoked)
        throw new GatewayError('conflict', `API key ${id} is revoked; create a new one`, { param: 'id' });
      await announceKeyChange(ctx);
      const rotated: KeyWithSecret = { ...(await one(id)), key: secret.key };
      return rotated;
    },
  );
}
