// The generated HAProxy configuration in front of two stand-in replicas whose /readyz the test sets:
// a replica that dies under traffic and comes back not ready yet (a restart whose first pool or
// settings read has not succeeded, apps/proxy routes/health.ts) gets no request until its /readyz
// says 200, then gets its share again. Needs haproxy on PATH (./start installs it); skipped without.
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@gonka-gateway/shared/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { findHaproxy, haproxyConfig, type LoadBalancer, startHaproxy } from './load-balancer.js';

/** A replica: /readyz answers as `ready` says, any other path answers its name. */
class StandIn {
  ready = true;
  server: Server | undefined;

  constructor(
    readonly name: string,
    readonly port: number,
  ) {}

  async listen(): Promise<void> {
    this.server = createServer((req, res) => {
      if (req.url === '/readyz') {
        res.writeHead(this.ready ? 200 : 503).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end(this.name);
    });
    this.server.listen(this.port, '127.0.0.1');
    await once(this.server, 'listening');
  }

  /** The process is gone: connections are refused from now on. */
  async die(): Promise<void> {
    const server = this.server!;
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
    this.server = undefined;
  }
}

const haproxy = findHaproxy();
const replicas: StandIn[] = [];
let lb: LoadBalancer | undefined;

afterAll(async () => {
  await lb?.stop();
  for (const r of replicas) if (r.server) await r.die();
});

describe.skipIf(!haproxy)('the load balancer', () => {
  it('keeps a replica that died under traffic out until its /readyz answers 200 again', async () => {
    const [a, b] = [new StandIn('a', await freePort()), new StandIn('b', await freePort())];
    replicas.push(a, b);
    await Promise.all([a.listen(), b.listen()]);
    const port = await freePort();
    const config = haproxyConfig({
      header: 'load-balancer.test.ts',
      bind: `127.0.0.1:${port}`,
      servers: replicas.map((r) => ({ name: r.name, address: `127.0.0.1:${r.port}` })),
    });
    lb = startHaproxy(haproxy!, join(mkdtempSync(join(tmpdir(), 'lb-test-')), 'haproxy.cfg'), config);
    const ask = async () => {
      const res = await fetch(`http://127.0.0.1:${port}/v1/models`, { signal: AbortSignal.timeout(10_000) });
      return res.status === 200 ? res.text() : `status ${res.status}`;
    };
    const answers = async (n: number) => {
      const out: string[] = [];
      for (let i = 0; i < n; i++) out.push(await ask());
      return out;
    };
    // Both in rotation.
    await expect
      .poll(async () => new Set(await answers(4)), { timeout: 20_000, interval: 100 })
      .toEqual(new Set(['a', 'b']));

    // b dies while requests keep coming: each is answered (a refused connection is retried on a).
    await b.die();
    expect(new Set(await answers(6))).toEqual(new Set(['a']));
    // b is back at once but not ready: not one request reaches it.
    b.ready = false;
    await b.listen();
    expect(new Set(await answers(40))).toEqual(new Set(['a']));
    // Ready: b gets its share again.
    b.ready = true;
    await expect
      .poll(async () => (await answers(4)).includes('b'), { timeout: 10_000, interval: 100 })
      .toBe(true);
  });
});
