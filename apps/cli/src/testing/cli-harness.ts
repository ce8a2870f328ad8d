// Test support: run gwctl in-process with captured output, and a fake chain + node on an ephemeral
// port (real HTTP, CONTRIBUTING). The fake is deliberately small; the devnet integration tests will
// exercise the same commands against packages/devnet.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CliIo } from '../cli-io.js';
import { runCli } from '../run-cli.js';

export const TEST_KEY = '10af8dc1f63fb90cfa39943a5afbf262cd84f24919e7d05653e3b03313e685ce';
export const TEST_ADDRESS = 'gonka1waj8q9g2ekgardafc6plg77rgu2l3vfrg2y9jw';
export const PROVIDER = 'gonka1nwf70enksqqvwg8lue3vp0s25rhxgfw6hlx90p';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export async function gwctl(argv: string[], io: Partial<CliIo> = {}): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    env: {},
    ...io,
    stdout: { write: (s: string) => (stdout += s) },
    // A terminal on stderr when the test says so (progress redraws a line there).
    stderr: { ...(io.stderr?.isTTY ? { isTTY: true } : {}), write: (s: string) => (stderr += s) },
  });
  return { code, stdout, stderr };
}

export interface Recorded {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

export type Route = (
  req: Recorded,
  res: ServerResponse,
) => boolean | undefined | Promise<boolean | undefined>;

export function json(res: ServerResponse, status: number, body: unknown): true {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(text);
  return true;
}

export interface FakeServer {
  url: string;
  requests: Recorded[];
  close(): Promise<void>;
}

/** Routes are tried in order; the first returning true handled the request; otherwise 404. */
export async function startFakeServer(routes: Route[]): Promise<FakeServer> {
  const requests: Recorded[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const r = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
      };
      requests.push(r);
      for (const route of routes) if (await route(r, res)) return;
      json(res, 404, { code: 5, message: 'not found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
