// Cross-process tests start gateway processes exactly as ./start does.
import { once } from 'node:events';
import { createServer } from 'node:net';

export {
  REPO_ROOT,
  startTsProcess as startProcess,
  type TsProcess as RunningProcess,
  waitForHttp,
} from '@gonka-gateway/deploy';

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
