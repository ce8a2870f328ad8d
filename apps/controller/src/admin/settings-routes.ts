// GET/POST /v1/admin/settings (spec §2.4–§2.6, §3.2–§3.4). POST takes any subset; objects
// (escrow_rotation, disabled) merge field by field, arrays (model_limits, escrow_rotation.models)
// replace the whole list. The merged result is validated as a whole — a cap below the default, an
// unknown model id, a new_url that is not http(s), a private_key_env naming an unset variable are
// 400s naming the field — then written with settings.revision + 1 and the revision published on
// the settings channel, so every proxy reloads at once. Amounts are kept as decimal strings.
// passthrough_parameters extends §2.4: the top-level chat parameters every proxy passes to the
// hosts without a rule, besides GATEWAY_PASSTHROUGH_PARAMETERS (apps/proxy README "Request
// policy"). A list sent is checked alone: names as the environment's list spells them, at most
// MAX_PASSTHROUGH_PARAMETERS, none twice, none the gateway has a rule for or passes through already.
// A bridge window (pre_poc_blocks × the block time estimate) shorter than one rotation tick is refused.
import { queryGovernanceModels } from '@gonka-gateway/chain';
import {
  DEFAULT_PASSTHROUGH,
  GatewayError,
  MAX_PASSTHROUGH_PARAMETERS,
  openAIErrorSchema,
  PARAMETER_NAME,
  RULED_CHAT_PARAMETERS,
} from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import type { AdminSettings, StoredRotation } from '../admin-api.js';
import { announceChange, settledWithin } from '../announce-change.js';
import { readBlockTime } from '../chain/block-time.js';
import { readFromNode } from '../chain/node-read.js';
import type { ControllerContext } from '../controller-context.js';
import { settleTimingOf } from '../upkeep/retire-by.js';
import { envNameSchema, errorResponses, toUint, uintSchema } from './schemas.js';

/** The settings as a change is merged and checked: the answer's fields, the rotation as stored. */
type Settings = Omit<AdminSettings, 'revision' | 'escrow_rotation'> & { escrow_rotation: StoredRotation };

type SettingsPatch = Partial<
  Omit<Settings, 'escrow_rotation' | 'disabled'> & {
    escrow_rotation: Partial<Settings['escrow_rotation']>;
    disabled: Partial<Settings['disabled']>;
  }
>;

const rotationModelSchema = {
  type: 'object',
  required: ['model_id', 'temp_count', 'target_count', 'amount', 'private_key_env'],
  additionalProperties: false,
  properties: {
    model_id: { type: 'string', minLength: 1 },
    temp_count: { type: 'integer', minimum: 0, maximum: 100 },
    target_count: { type: 'integer', minimum: 0, maximum: 100 },
    amount: uintSchema,
    private_key_env: envNameSchema,
    settle: { type: 'boolean' },
  },
} as const;

const patchSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    default_request_max_tokens: { type: 'integer', minimum: 1 },
    request_max_tokens_cap: { type: 'integer', minimum: 1 },
    model_limits: {
      type: 'array',
      items: {
        type: 'object',
        required: ['model_id', 'access_mode'],
        additionalProperties: false,
        properties: {
          model_id: { type: 'string', minLength: 1 },
          access_mode: { type: 'string', enum: ['admin_only', 'api_key'] },
        },
      },
    },
    passthrough_parameters: {
      type: 'array',
      description: `Top-level chat parameters passed to the hosts without a rule, besides GATEWAY_PASSTHROUGH_PARAMETERS and chat_template_kwargs: at most ${MAX_PASSTHROUGH_PARAMETERS} names of a-z, 0-9 and _ (starting with a letter, up to 64 characters), none the gateway has a rule for. Replaces the whole list.`,
      items: { type: 'string' },
    },
    escrow_rotation: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: { type: 'boolean' },
        pre_poc_blocks: { type: 'integer', minimum: 1 },
        models: { type: 'array', items: rotationModelSchema },
      },
    },
    disabled: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: { type: 'boolean' },
        message: { type: 'string', maxLength: 2_000 },
        new_url: { type: ['string', 'null'], maxLength: 2_000 },
      },
    },
  },
} as const;

const settingsSchema = {
  type: 'object',
  properties: {
    revision: { type: 'string' },
    ...patchSchema.properties,
    escrow_rotation: {
      type: 'object',
      properties: {
        enabled: { type: 'boolean' },
        pre_poc_blocks: { type: 'integer' },
        models: {
          type: 'array',
          items: {
            ...rotationModelSchema,
            properties: { ...rotationModelSchema.properties, amount: { type: 'string' } },
          },
        },
      },
    },
  },
} as const;

interface SettingsRow {
  default_request_max_tokens: number;
  request_max_tokens_cap: number;
  model_limits: Settings['model_limits'];
  passthrough_parameters: Settings['passthrough_parameters'];
  escrow_rotation: Settings['escrow_rotation'];
  disabled: Settings['disabled'];
  revision: string;
}

async function readSettingsRow(ctx: ControllerContext): Promise<SettingsRow> {
  const [row] = await ctx.sql<SettingsRow[]>`
    select default_request_max_tokens, request_max_tokens_cap, model_limits, passthrough_parameters,
           escrow_rotation, disabled, revision::text as revision
      from settings where id = 1`;
  if (!row) throw new GatewayError('service_unavailable', 'settings are not bootstrapped yet');
  return row;
}

function view(row: SettingsRow): AdminSettings {
  const rotation = row.escrow_rotation;
  return {
    revision: row.revision,
    default_request_max_tokens: row.default_request_max_tokens,
    request_max_tokens_cap: row.request_max_tokens_cap,
    model_limits: row.model_limits,
    passthrough_parameters: row.passthrough_parameters ?? [],
    escrow_rotation: {
      enabled: rotation.enabled,
      pre_poc_blocks: rotation.pre_poc_blocks,
      models: rotation.models.map((m) => ({ ...m, amount: String(m.amount), settle: m.settle ?? true })),
    },
    disabled: {
      enabled: row.disabled.enabled,
      message: row.disabled.message ?? '',
      new_url: row.disabled.new_url ?? null,
    },
  };
}

async function validate(ctx: ControllerContext, next: Settings, patch: SettingsPatch): Promise<void> {
  if (next.request_max_tokens_cap < next.default_request_max_tokens) {
    const param =
      patch.request_max_tokens_cap !== undefined ? 'request_max_tokens_cap' : 'default_request_max_tokens';
    throw new GatewayError(
      'invalid_request',
      `request_max_tokens_cap ${next.request_max_tokens_cap} is below default_request_max_tokens ${next.default_request_max_tokens}`,
      { param },
    );
  }
  const d = next.disabled;
  if (d.new_url !== null && d.new_url !== undefined) {
    let ok = false;
    try {
      const u = new URL(d.new_url);
      ok = u.protocol === 'http:' || u.protocol === 'https:';
    } catch {
      ok = false;
    }
    if (!ok)
      throw new GatewayError('invalid_request', 'disabled.new_url must be an http(s) URL', {
        param: 'disabled.new_url',
      });
  }
  if (d.enabled && !d.new_url) {
    throw new GatewayError(
      'invalid_request',
      'disabled.enabled needs disabled.new_url (where clients are sent)',
      {
        param: 'disabled.new_url',
      },
    );
  }
  if (patch.passthrough_parameters !== undefined) checkPassthrough(patch.passthrough_parameters);
  if (
    next.escrow_rotation.enabled &&
    (patch.escrow_rotation?.pre_poc_blocks !== undefined || patch.escrow_rotation?.enabled === true)
  ) {
    await checkBridgeWindow(ctx, next.escrow_rotation.pre_poc_blocks);
  }
  const seen = new Set<string>();
  next.escrow_rotation.models.forEach((m, i) => {
    if (seen.has(m.model_id)) {
      throw new GatewayError('invalid_request', `escrow_rotation.models lists ${m.model_id} twice`, {
        param: `escrow_rotation.models[${i}].model_id`,
      });
    }
    seen.add(m.model_id);
    toUint(m.amount, `escrow_rotation.models[${i}].amount`);
    const value = ctx.env[m.private_key_env];
    if (value === undefined || value.trim() === '') {
      throw new GatewayError(
        'invalid_request',
        `environment variable ${m.private_key_env} is not set on the controller`,
        {
          param: `escrow_rotation.models[${i}].private_key_env`,
        },
      );
    }
  });
  // Model ids are checked against the chain's governance models, only for lists that changed.
  const named: Array<[string, string]> = [
    ...(patch.model_limits ?? []).map((m, i): [string, string] => [
      m.model_id,
      `model_limits[${i}].model_id`,
    ]),
    ...(patch.escrow_rotation?.models ?? []).map((m, i): [string, string] => [
      m.model_id,
      `escrow_rotation.models[${i}].model_id`,
    ]),
  ];
  if (named.length > 0) {
    const governance = await readFromNode('the governance models', () => queryGovernanceModels(ctx.chain));
    const models = new Set(governance.map((m) => m.id));
    for (const [id, param] of named) {
      if (!models.has(id))
        throw new GatewayError('invalid_request', `model ${id} is not a governance model on this chain`, {
          param,
        });
    }
  }
}

/**
 * The bridge stage (spec §3.4) lasts pre_poc_blocks blocks; a rotation tick must fall inside it, or
 * the switch can pass with no temporary escrow created and the regular ones not retired. The block
 * time is the chain's: the controller's estimate (chain/block-time.ts) is used, and without one
 * nothing is refused. Checked when rotation is switched on or pre_poc_blocks is sent.
 */
async function checkBridgeWindow(ctx: ControllerContext, prePocBlocks: number): Promise<void> {
  const blockTime = await readBlockTime(ctx);
  if (!blockTime) return;
  const { tickMs } = settleTimingOf(ctx);
  const bridgeMs = prePocBlocks * blockTime.msPerBlock;
  if (bridgeMs >= tickMs) return;
  const ms = Math.round(blockTime.msPerBlock);
  const least = Math.ceil(tickMs / blockTime.msPerBlock);
  throw new GatewayError(
    'invalid_request',
    `escrow_rotation.pre_poc_blocks ${prePocBlocks} × ~${ms} ms a block (the controller's block time estimate over the last ${blockTime.overBlocks} blocks) = ${(bridgeMs / 1_000).toFixed(1)} s, shorter than one rotation tick (GATEWAY_ROTATION_TICK_MS ${tickMs} ms): the bridge stage could pass between two ticks; use at least ${least} blocks or a shorter tick`,
    { param: 'escrow_rotation.pre_poc_blocks' },
  );
}

const RULED = new Set(RULED_CHAT_PARAMETERS);

/**
 * A pass-through list as sent. Only a list sent is checked: a stored one naming a parameter a later
 * version gave a rule to does not block other changes (the proxy applies the rule and ignores the name).
 */
function checkPassthrough(names: readonly string[]): void {
  const param = 'passthrough_parameters';
  if (names.length > MAX_PASSTHROUGH_PARAMETERS) {
    throw new GatewayError(
      'invalid_request',
      `${param} lists ${names.length} names; at most ${MAX_PASSTHROUGH_PARAMETERS} are allowed`,
      { param },
    );
  }
  const seen = new Set<string>();
  names.forEach((name, i) => {
    const at = `${param}[${i}]`;
    const refuse = (why: string): never => {
      throw new GatewayError('invalid_request', `${at}: ${why}`, { param: at });
    };
    if (!PARAMETER_NAME.test(name)) {
      refuse(
        `${JSON.stringify(name.slice(0, 80))} is not a parameter name (a-z, 0-9 and _, starting with a letter, at most 64 characters)`,
      );
    }
    if (RULED.has(name))
      refuse(`'${name}' has a rule of the request policy; its rule applies whatever this list says`);
    if (DEFAULT_PASSTHROUGH.includes(name)) refuse(`'${name}' is always passed through`);
    if (seen.has(name)) refuse(`'${name}' is listed twice`);
    seen.add(name);
  });
}

export async function settingsRoutes(
  app: FastifyInstance,
  options: {
    ctx: ControllerContext;
    /** After a change is stored (app.ts: a rotation tick right away when rotation is on, spec §3.4). */
    onChange?: (change: { revision: string; rotationOn: boolean }) => unknown;
  },
): Promise<void> {
  const { ctx } = options;
  app.get(
    '/v1/admin/settings',
    { schema: { response: { 200: settingsSchema, 401: openAIErrorSchema } } },
    async () => view(await readSettingsRow(ctx)),
  );

  app.post<{ Body: SettingsPatch }>(
    '/v1/admin/settings',
    { schema: { body: patchSchema, response: { 200: settingsSchema, ...errorResponses } } },
    async (request) => {
      const patch = request.body;
      const current = view(await readSettingsRow(ctx));
      const next: Settings = {
        default_request_max_tokens: patch.default_request_max_tokens ?? current.default_request_max_tokens,
        request_max_tokens_cap: patch.request_max_tokens_cap ?? current.request_max_tokens_cap,
        model_limits: patch.model_limits ?? current.model_limits,
        passthrough_parameters: patch.passthrough_parameters ?? current.passthrough_parameters,
        escrow_rotation: { ...current.escrow_rotation, ...patch.escrow_rotation },
        disabled: { ...current.disabled, ...patch.disabled },
      };
      await validate(ctx, next, patch);
      next.escrow_rotation.models = next.escrow_rotation.models.map((m, i) => ({
        ...m,
        amount: toUint(m.amount, `escrow_rotation.models[${i}].amount`).toString(),
        settle: m.settle ?? true,
      }));
      const [row] = await ctx.sql<SettingsRow[]>`
        update settings set default_request_max_tokens = ${next.default_request_max_tokens},
               request_max_tokens_cap = ${next.request_max_tokens_cap},
               model_limits = ${ctx.sql.json(next.model_limits as never)},
               passthrough_parameters = ${ctx.sql.json(next.passthrough_parameters)},
               escrow_rotation = ${ctx.sql.json(next.escrow_rotation as never)},
               disabled = ${ctx.sql.json(next.disabled as never)},
               revision = revision + 1, updated_at = now()
         where id = 1
        returning default_request_max_tokens, request_max_tokens_cap, model_limits, passthrough_parameters,
                  escrow_rotation, disabled, revision::text as revision`;
      if (!row) throw new GatewayError('service_unavailable', 'settings are not bootstrapped yet');
      await announceChange(ctx, ctx.keys.settingsChanges, row.revision);
      await settledWithin(
        ctx,
        'the follow-up of a settings change',
        Promise.resolve(
          options.onChange?.({ revision: row.revision, rotationOn: row.escrow_rotation.enabled }),
        ),
      );
      return view(row);
    },
  );
}
