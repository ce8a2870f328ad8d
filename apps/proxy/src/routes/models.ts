// GET /v1/models: the OpenAI list of models the pool can serve now (an active escrow),
// limited to what the caller may use: every model for the admin key, `api_key` models for a user key.
import { GatewayError } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import type { SettingsSource } from '../gate/settings.js';
import type { PoolSnapshot } from '../ownership/pool-snapshot.js';

export async function modelsRoute(
  app: FastifyInstance,
  o: { pool: PoolSnapshot; settings: SettingsSource },
): Promise<void> {
  app.get('/v1/models', async (request) => {
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
    return {
      object: 'list',
      data: [...created.entries()]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([id, at]) => ({ id, object: 'model', created: at, owned_by: 'gonka' })),
    };
  });
}
