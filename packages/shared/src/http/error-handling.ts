import type { FastifyError, FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { GatewayError, toErrorResponse } from '../errors.js';
import { drainRequest } from './drain-request.js';

/**
 * The field a schema error is about: its path, plus the property a `required` or
 * `additionalProperties` error names (their path is the enclosing object), so a missing or unknown
 * field is named too. Array items are written `list[0].field`, as the routes' own checks name them.
 */
function fieldOf(error: { instancePath?: string; params?: Record<string, unknown> }): string | undefined {
  const path = (error.instancePath ?? '')
    .replace(/^\//, '')
    .replace(/\/(\d+)(?=\/|$)/g, '[$1]')
    .replace(/\//g, '.');
  const named = error.params?.missingProperty ?? error.params?.additionalProperty;
  const field = [path, typeof named === 'string' ? named : ''].filter(Boolean).join('.');
  return field === '' ? undefined : field;
}

// Fastify's own errors mapped to the gateway's table, so every failure has the OpenAI shape.
function fromFastifyError(err: FastifyError): GatewayError | undefined {
  if (err.validation) {
    const first = err.validation[0];
    const param = first ? fieldOf(first as Parameters<typeof fieldOf>[0]) : undefined;
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

/**
 * One error handler: logs 5xx with their cause, returns `{"error":{…}}` and never a stack. A body
 * over the limit is answered 413 once the rest of the upload has been read (drain-request.ts), with
 * `connection: close`, so the client (and a load balancer in front) receives the answer instead of
 * a reset.
 */
export const errorHandling = fp(
  async (app: FastifyInstance) => {
    app.setErrorHandler((err: FastifyError, request, reply) => {
      const mapped = err instanceof GatewayError ? err : fromFastifyError(err);
      const { status, body } = toErrorResponse(mapped ?? err);
      if (status >= 500) request.log.error({ err }, 'request failed');
      else request.log.info({ code: body.error.code }, 'request rejected');
      if (status === 413) {
        return drainRequest(request.raw).then(() =>
          reply.status(status).header('connection', 'close').send(body),
        );
      }
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
