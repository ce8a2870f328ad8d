// Fastify instances for the devnet's servers: no logging unless asked; no type coercion and no
// silent removal of unknown fields (a string where the spec wants a number is an error, not a
// conversion); connections force-closed on close() (a request the `no-response` fault left hanging
// must not keep the devnet open); `/x/` routed like `/x` (clients join `/chain-rpc/` and `status`
// either way).
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Faults, QueryFault } from './faults.js';

export function createApp(logger: boolean): FastifyInstance {
  return Fastify({
    logger,
    forceCloseConnections: true,
    routerOptions: { ignoreTrailingSlash: true },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false } },
  });
}

export async function listen(app: FastifyInstance, host: string, port: number): Promise<string> {
  await app.listen({ host, port });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('server has no TCP address');
  return `http://${host}:${address.port}`;
}

/** Applies a query fault (delay, then optionally an error) before a GET handler runs. */
export function installQueryFault(
  app: FastifyInstance,
  faults: Faults,
  target: 'chainQuery' | 'nodeQuery',
  errorBody: (fault: QueryFault) => unknown,
): void {
  app.addHook('onRequest', async (request, reply) => {
    if (request.method !== 'GET') return;
    const fault = faults.takeQueryFault(target, request.url);
    if (!fault) return;
    if (fault.delayMs) await sleep(fault.delayMs);
    if (fault.status) return reply.code(fault.status).send(errorBody(fault));
  });
}
