import type { FastifyError, FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { GatewayError, toErrorResponse } from '../errors.js';

// Fastify's own errors mapped to the gateway's table, so every failure has the OpenAI shape.
function fromFastifyError(err: FastifyError): GatewayError | undefined {
  if (err.validation) {
    const first = err.validation[0];
    const param = first?.instancePath ? first.instancePath.replace(/^\//, '').replace(/\//g, '.') : undefined;
    return new GatewayError('invalid_request', `invalid request: ${err.message}`, param ? { param } : {});
  }
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new GatewayError('invalid_json', 'request body is not valid JSON');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new GatewayError('body_too_large', 'request body is too large');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new GatewayError('unsupported_media_type', 'content type must be application/json');
    default:
      if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
        return new GatewayError('invalid_request', err.message);
      }
      return undefined;
  }
}

/** One error handler: logs 5xx with their cause, returns `{"error":{…}}` and never a stack. */
export const errorHandling = fp(
  async (app: FastifyInstance) => {
    app.setErrorHandler((err: FastifyError, request, reply) => {
      const mapped = err instanceof GatewayError ? err : fromFastifyError(err);
      const { status, body } = toErrorResponse(mapped ?? err);
      if (status >= 500) request.log.error({ err }, 'request failed');
      else request.log.info({ code: body.error.code }, 'request rejected');
      return reply.status(status).send(body);
    });
    app.setNotFoundHandler((request, reply) => {
      const { status, body } = toErrorResponse(
        new GatewayError('not_found', `no route for ${request.method} ${request.url.split('?')[0]}`),
      );
      return reply.status(status).send(body);
    });
  },
  { name: 'error-handling' },
);
