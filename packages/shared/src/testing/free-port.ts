// An ephemeral TCP port for a test's own server or child process (a private redis-server, a gateway
// replica), so test files running in parallel never share one.
import { once } from 'node:events';
import { createServer } from 'node:net';

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}
