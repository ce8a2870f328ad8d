// GET /v1/models: the OpenAI list of models the pool can serve now (an active escrow),
// limited to what the caller may use: every model for the admin key, `api_key` models for a user key.
// GET /v1/models/{model} (the openai client's `models.retrieve`): one entry of that list, or 404
// `model_not_found` for a model not in it, as OpenAI answers a model that does not exist or the key
// may not use. Model ids hold slashes (`Qwen/Qwen3-…`), taken as they come or percent-encoded.
import { GatewayError } from '@gonka-gateway/shared';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { SettingsSource } from '../gate/settings.js';
import type { PoolSnapshot } from '../ownership/pool-snapshot.js';

interface ModelEntry {
  id: string;
  object: 'model';
  created: number;
  owned_by: 'gonka';
}

export async function modelsRoute(
  app: FastifyInstance,
  o: { pool: PoolSnapshot; settings: SettingsSource },
): Promise<void> {
  /** The models `request`'s caller may use that the pool serves now, by id. */
  const modelsFor = (request: FastifyRequest): ModelEntry[] => {
    const caller = request.caller;
    if (caller.kind === 'anonymous') throw new GatewayError('missing_api_key', 'an API key is required');
    if (caller.kind === 'invalid') throw new GatewayError('invalid_api_key', 'the API key is not valid');
    const access = o.settings.current.access;
    const created = new Map<string, number>();
    for (const e of o.pool.escrows) {
      if (e.status !== 'active' || !e.owner) continue;
      if (caller.kind === 'user' && access.get(e.modelId) !== 'api_key') continue;
      const at = Math.floor(e.updatedAtMs / 1000);
      created.set(e.modelId, Math.min(created.get(e.modelId) ?? at, at));
    }
    return [...created.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([id, at]) => ({ id, object: 'model', created: at, owned_by: 'gonka' }));
  };

  app.get('/v1/models', async (request) => ({ object: 'list', data: modelsFor(request) }));

  app.get<{ Params: { '*': string } }>('/v1/models/*', async (request) => {
    const id = request.params['*'];
    const model = modelsFor(request).find((m) => m.id === id);
    if (!model) {
      throw new GatewayError(
        'model_not_found',
        `The model '${id}' does not exist or you do not have access to it.`,
      );
    }
    return model;
  });
}
