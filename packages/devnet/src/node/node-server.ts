// The public node (default :9000): node API, host-0's direct endpoint, chain REST under /chain-api,
// CometBFT RPC under /chain-rpc (as real nodes serve them), devnet admin routes, and the unsigned
// mock-model endpoint under /devnet/mlnode.
import type { FastifyInstance } from 'fastify';
import { chainRestRoutes } from '../chain/rest-routes.js';
import type { DevnetCore } from '../core.js';
import { createApp } from '../http.js';
import { modelRoutes } from '../model/model-routes.js';
import { rpcRoutes } from '../rpc/rpc-routes.js';
import { adminRoutes } from './admin-routes.js';
import { directInferenceRoutes } from './direct-inference.js';
import { nodeRoutes } from './node-routes.js';
import type { ReplayCache } from './replay-cache.js';

export async function buildNodeApp(core: DevnetCore, replay: ReplayCache): Promise<FastifyInstance> {
  const app = createApp(core.logger);
  const host = core.hosts[0]!;
  await app.register(nodeRoutes, { core, host });
  await app.register(directInferenceRoutes, { core, host, replay });
  await app.register(chainRestRoutes, { core, prefix: '/chain-api' });
  await app.register(rpcRoutes, { core, prefix: '/chain-rpc' });
  await app.register(adminRoutes, { core });
  await app.register(modelRoutes, { model: core.model, prefix: '/devnet/mlnode' });
  return app;
}
