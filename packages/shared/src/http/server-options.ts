import Fastify, { type FastifyInstance, type FastifyServerOptions, LogController } from 'fastify';
import { GatewayError } from '../errors.js';
import type { Logger } from '../logger.js';

/**
 * A Fastify server with the options the proxy and the controller share. Ajv does not coerce types:
 * a number where a string is expected is a client error, not something to guess at; path ids are
 * validated by pattern instead.
 */
export function createFastify(
  logger?: Logger,
  overrides: Partial<FastifyServerOptions> = {},
): FastifyInstance {
  const app = Fastify({
    ...(logger ? { loggerInstance: logger } : {}),
    bodyLimit: 4 * 1024 * 1024,
    // Close idle keep-alive sockets on close(), so draining waits only for real in-flight requests.
    forceCloseConnections: 'idle',
    requestIdHeader: 'x-request-id',
    // Per-request lines would dominate the logs at gateway rates; routes log what matters.
    logController: new LogController({ disableRequestLogging: true }),
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false } },
    ...overrides,
  }) as unknown as FastifyInstance;
  acceptEmptyBodies(app);
  // close() waits for every socket. A request still in flight when shutdown starts leaves its
  // keep-alive socket open after answering; `Connection: close` ends it with that last response.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // A callback hook: it runs on every answer, and an async one costs a promise each.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  return app;
}

/**
 * An empty body reads as no body whatever its content type: many HTTP clients send
 * `content-type: application/json` on a body-less POST or DELETE (finalize, deactivate), and a route
 * that takes no body must not refuse it as invalid JSON. A route that needs a body says so in its
 * schema, which then refuses the missing body by name. A non-empty body of a type no parser takes
 * stays a 415; JSON keeps Fastify's parser (prototype poisoning refused).
 */
function acceptEmptyBodies(app: FastifyInstance): void {
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if ((body as string).trim() === '') return done(null, undefined);
    json(request, body as string, done);
  });
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => {
    if ((body as Buffer).length === 0) return done(null, undefined);
    done(new GatewayError('unsupported_media_type', 'content type must be application/json'), undefined);
  });
}
