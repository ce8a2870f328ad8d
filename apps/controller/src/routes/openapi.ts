// GET /openapi.json and GET /docs (issue 12): an OpenAPI 3.1 document built from the JSON schemas
// the routes already validate with, collected by an onRoute hook, so the document cannot drift from
// what the server enforces. No dependency: the schemas are JSON Schema already, and /docs is a
// plain HTML index (the gateway host has no internet access for a UI bundle).
import { GATEWAY_VERSION } from '@gonka-gateway/shared';
import type { FastifyInstance, RouteOptions } from 'fastify';

type Schema = Record<string, unknown>;
interface Operation {
  method: string;
  path: string;
  schema: Schema;
}

const SECURED = /^\/(v1\/admin|v1\/debug|devshard\/\{id\}|v1\/finalize)/;

function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z_]+)/g, '{$1}');
}

function parameters(where: 'path' | 'query' | 'header', schema: unknown): Schema[] {
  const s = schema as { properties?: Record<string, Schema>; required?: string[] } | undefined;
  return Object.entries(s?.properties ?? {}).map(([name, p]) => ({
    name,
    in: where,
    required: where === 'path' || (s?.required ?? []).includes(name),
    schema: p,
  }));
}

function operation(op: Operation): Schema {
  const s = op.schema;
  const responses: Record<string, Schema> = {};
  for (const [code, body] of Object.entries((s.response ?? {}) as Record<string, Schema>)) {
    responses[code] = {
      description: code.startsWith('2') ? 'success' : 'error',
      content: { 'application/json': { schema: body } },
    };
  }
  if (Object.keys(responses).length === 0) responses['200'] = { description: 'success' };
  return {
    ...(SECURED.test(op.path) ? { security: [{ adminKey: [] }] } : {}),
    parameters: [
      ...parameters('path', s.params),
      ...parameters('query', s.querystring),
      ...parameters('header', s.headers),
    ],
    ...(s.body
      ? { requestBody: { required: true, content: { 'application/json': { schema: s.body } } } }
      : {}),
    responses,
  };
}

/** Register before the routes it should describe (it listens to onRoute). */
export async function openApiRoutes(app: FastifyInstance): Promise<void> {
  const operations: Operation[] = [];
  app.addHook('onRoute', (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (method === 'HEAD' || route.url.includes('//')) continue;
      if (route.url === '/openapi.json' || route.url === '/docs') continue;
      operations.push({
        method: method.toLowerCase(),
        path: openApiPath(route.url),
        schema: (route.schema ?? {}) as Schema,
      });
    }
  });
  const document = () => {
    const paths: Record<string, Record<string, Schema>> = {};
    for (const op of operations) {
      paths[op.path] ??= {};
      paths[op.path]![op.method] = operation(op);
    }
    return {
      openapi: '3.1.0',
      info: { title: 'Gonka gateway controller', version: GATEWAY_VERSION },
      components: {
        securitySchemes: {
          adminKey: { type: 'http', scheme: 'bearer', description: 'DEVSHARD_ADMIN_API_KEY' },
        },
      },
      paths,
    };
  };
  app.get('/openapi.json', async () => document());
  app.get('/docs', async (_request, reply) => {
    const htmlText = (t: string) => t.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
    const rows = operations
      .map((op) => `<li><code>${op.method.toUpperCase()} ${htmlText(op.path)}</code></li>`)
      .join('');
    return reply
      .type('text/html; charset=utf-8')
      .send(
        `<!doctype html><title>Controller API</title><h1>Controller API</h1><p>Machine-readable: <a href="/openapi.json">/openapi.json</a></p><ul>${rows}</ul>`,
      );
  });
}
