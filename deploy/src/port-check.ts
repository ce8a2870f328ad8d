// Before anything starts: each port ./start will listen on must be free, and a taken one is named
// with the variable that moves it, instead of a process dying later with EADDRINUSE.
import { once } from 'node:events';
import { createServer } from 'node:net';

async function isFree(port: number): Promise<boolean> {
  const server = createServer();
  server.listen(port, '127.0.0.1');
  try {
    await Promise.race([once(server, 'listening'), once(server, 'error').then(([e]) => Promise.reject(e))]);
  } catch {
    return false;
  }
  server.close();
  await once(server, 'close');
  return true;
}

/** The first taken port as one line ("port 8080 is taken; DEVSHARD_PORT moves it"), or undefined. */
export async function takenPort(ports: { port: string; variable: string }[]): Promise<string | undefined> {
  for (const { port, variable } of ports) {
    if (!(await isFree(Number(port)))) return `port ${port} is taken; ${variable} moves it`;
  }
  return undefined;
}
