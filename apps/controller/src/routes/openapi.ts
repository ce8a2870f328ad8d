// GET /openapi.json and the Swagger UI at /docs: @fastify/swagger builds OpenAPI 3.1 from the JSON
// schemas the routes validate with, so the document cannot drift from what the server enforces, and
// @fastify/swagger-ui serves the UI from assets inside its npm package (no CDN: it works on a host
// without internet access). Register before the routes it should describe (it listens to onRoute).
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { GATEWAY_VERSION } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';

/** Routes that need `Authorization: Bearer <DEVSHARD_ADMIN_API_KEY>` (Fastify's `:param` form). */
const SECURED = /^\/(v1\/admin|v1\/debug|v1\/requests|devshard\/:id|v1\/finalize)/;

export async function openApiRoutes(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Gonka gateway controller', version: GATEWAY_VERSION },
      components: {
        securitySchemes: {
          adminKey: { type: 'http', scheme: 'bearer', description: 'DEVSHARD_ADMIN_API_KEY' },
        },
      },
    },
    transform: ({ schema, url }) => {
      // `/devshard//v1/finalize` only answers an empty id with 404; it is not an operation.
      if (url.includes('//')) return { schema: { ...schema, hide: true }, url };
      return { schema: SECURED.test(url) ? { ...schema, security: [{ adminKey: [] }] } : schema, url };
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
