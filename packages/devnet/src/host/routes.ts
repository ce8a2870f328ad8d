// The devshard host of one participant (devshard-protocol.md §4): every route under
// {inference_url}/devshard/{version}/sessions/{escrow_id}/…, mounted through the participant-plugin
// seam. The routes are stateless; sessions live in core.devshardHosts, so a restart keeps them.
import type { FastifyInstance } from 'fastify';
import type { ParticipantContext } from '../participant/participant-server.js';
import { registerChatRoute } from './chat-route.js';
import { registerQueryRoutes } from './query-routes.js';
import type { RouteEnv } from './route-context.js';
import { registerVerifyRoutes } from './verify-routes.js';

/** The reference host's request body cap (10 MiB): catch-up chunks and prompts fit, abuse does not. */
export const MAX_BODY_BYTES = 10 * 1024 * 1024;

export async function devshardHostRoutes(
  app: FastifyInstance,
  { host, core }: ParticipantContext,
): Promise<void> {
  // Signed bodies are verified over their exact bytes (§2.4), whatever the content type says: keep
  // them raw (this scope only; the participant's other routes keep their JSON parser).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES }, (_req, body, done) =>
    done(null, body),
  );
  const env: RouteEnv = { core, host, store: core.devshardHosts.store(host.address) };
  registerChatRoute(app, env);
  registerQueryRoutes(app, env);
  registerVerifyRoutes(app, env);
}
