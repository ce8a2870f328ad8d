// Admin, debug, request-record (/v1/requests/{request_id}) and finalize routes (spec §4), and the
// operator console's static page (operator-guide.md §12), forwarded to the controller with @fastify/reply-from, streamed both ways, so one {gateway_url} serves the
// whole API (architecture §1). The controller checks the admin key itself; the body is passed
// through unparsed.
import replyFrom from '@fastify/reply-from';
import type { FastifyInstance } from 'fastify';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const FINALIZE_ONE = '/devshard/:id/v1/finalize';

export async function controllerForward(app: FastifyInstance, o: { controllerUrl: string }): Promise<void> {
  await app.register(replyFrom, { base: o.controllerUrl });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
  for (const url of [
    '/v1/admin/*',
    '/v1/debug/*',
    '/v1/requests/*',
    '/v1/finalize',
    FINALIZE_ONE,
    '/console',
    '/console/*',
  ]) {
    app.route({
      method: METHODS,
      url,
      handler: async (request, reply) => {
        // Spec §4: finalize with an empty id answers 404 with an empty body.
        if (url === FINALIZE_ONE && (request.params as { id?: string }).id === '') {
          return reply.status(404).send();
        }
        return reply.from(request.url);
      },
    });
  }
}
