// The generated HAProxy configuration in front of two stand-in replicas whose /readyz the test sets:
// a replica that dies under traffic and comes back not ready yet (a restart whose first pool or
// settings read has not succeeded, apps/proxy routes/health.ts) gets no request until its /readyz
// says 200, then gets its share again; with every replica gone (or answering garbage) the load
// balancer's own answer is an OpenAI JSON error with Retry-After (tests/processes/dependency-outages
// sees the openai client read it).
// Needs haproxy on PATH (./start installs it); skipped without.
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@gonka-gateway/shared/testing';
import { afterAll, describe, expect, it } from 'vitest';
import {
  findHaproxy,
  haproxyConfig,
  LOAD_BALANCER_ERRORS,
  type LoadBalancer,
  startHaproxy,
} from './load-balancer.js';

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
const balancers: LoadBalancer[] = [];
const closers: Array<() => void> = [];

afterAll(async () => {
  await lb?.stop();
  for (const b of balancers) await b.stop();
  for (const r of replicas) if (r.server) await r.die();
  for (const close of closers) close();
});

/** An answer as a client sees it. */
async function answer(url: string) {
  const res = await fetch(url, { method: 'POST', body: '{}', signal: AbortSignal.timeout(10_000) });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** The load balancer's own error: the OpenAI shape, JSON, Retry-After, the code of its status. */
function expectOpenAIError(a: Awaited<ReturnType<typeof answer>>, status: number) {
  expect(a.status).toBe(status);
  expect(a.headers.get('content-type')).toBe('application/json');
  expect(Number(a.headers.get('retry-after'))).toBeGreaterThan(0);
  const body = JSON.parse(a.text);
  expect(body).toEqual({
    error: {
      message: expect.any(String),
      type: 'api_error',
      param: null,
      code: LOAD_BALANCER_ERRORS.find((e) => e.status === status)!.code,
    },
  });
}

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

  it('answers in the OpenAI error shape with Retry-After when every replica is gone, or one answers garbage', async () => {
    const [a, b] = [new StandIn('a2', await freePort()), new StandIn('b2', await freePort())];
    replicas.push(a, b);
    await Promise.all([a.listen(), b.listen()]);
    // A third "replica" that answers with bytes that are not HTTP: HAProxy's 502.
    const garbagePort = await freePort();
    const garbage = createTcpServer((socket) => {
      // HAProxy resets the connection once it has read the garbage: that reset is expected here.
      socket.on('error', () => {});
      socket.end('this is not http\r\n\r\n');
    });
    garbage.listen(garbagePort, '127.0.0.1');
    await once(garbage, 'listening');
    closers.push(() => garbage.close());
    const port = await freePort();
    const config = haproxyConfig({
      header: 'load-balancer.test.ts (errors)',
      bind: `127.0.0.1:${port}`,
      servers: [a, b].map((r) => ({ name: r.name, address: `127.0.0.1:${r.port}` })),
    });
    // The config carries one JSON answer per status HAProxy may write itself.
    for (const e of LOAD_BALANCER_ERRORS)
      expect(config).toContain(`http-error status ${e.status} content-type application/json`);
    const balancer = startHaproxy(
      haproxy!,
      join(mkdtempSync(join(tmpdir(), 'lb-test-')), 'haproxy.cfg'),
      config,
    );
    balancers.push(balancer);
    const url = `http://127.0.0.1:${port}/v1/chat/completions`;
    await expect
      .poll(async () => (await answer(url).catch(() => undefined))?.text, { timeout: 20_000 })
      .toMatch(/a2|b2/);

    // Every replica stopped: HAProxy has no server and says so in JSON.
    await a.die();
    await b.die();
    await expect.poll(async () => (await answer(url)).status, { timeout: 20_000, interval: 100 }).toBe(503);
    expectOpenAIError(await answer(url), 503);
    // A replica that answers garbage: 502 in the same shape.
    const badPort = await freePort();
    const bad = startHaproxy(
      haproxy!,
      join(mkdtempSync(join(tmpdir(), 'lb-test-')), 'haproxy.cfg'),
      haproxyConfig({
        header: 'load-balancer.test.ts (bad gateway)',
        bind: `127.0.0.1:${badPort}`,
        // No health check for this one: the server stays in rotation and its answer is the error.
        servers: [{ name: 'garbage', address: `127.0.0.1:${garbagePort}` }],
      }).replace(/ check inter [^\n]*/, ''),
    );
    balancers.push(bad);
    const badUrl = `http://127.0.0.1:${badPort}/v1/chat/completions`;
    await expect
      .poll(async () => (await answer(badUrl).catch(() => undefined))?.status, {
        timeout: 20_000,
        interval: 100,
      })
      .toBe(502);
    expectOpenAIError(await answer(badUrl), 502);
  });
});
