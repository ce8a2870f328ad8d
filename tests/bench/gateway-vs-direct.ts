// The whole gateway (apps/proxy as its own process: auth, admission in Redis, pool routing, signing,
// write-ahead to Postgres, the devnet host's protocol work) against the same requests sent straight
// to the devnet's mock model, in the same run (docs/performance.md, "Method"). Reports the
// throughput ratio, added latency at concurrency 1 and under load, and the proxy's own CPU time and
// RSS per request, read from its /metrics (process CPU counters) before and after each run.
import { randomBytes } from 'node:crypto';
import { createChainClient, PrivateKey } from '@gonka-gateway/chain';
import { startTsProcess } from '@gonka-gateway/deploy';
import { QWEN_MODEL } from '@gonka-gateway/devnet';
import { PostgresSessionStore } from '@gonka-gateway/escrow-runtime';
import { insertEscrowRows } from '@gonka-gateway/escrow-runtime/testing';
import { bootstrapSettings, loadConfig } from '@gonka-gateway/shared';
import { createTestDatabase, createTestRedis } from '@gonka-gateway/shared/testing';
import postgres from 'postgres';
import { freePort } from '../support/gateway-process.js';
import { benchRuntime } from './bench-runtime.js';
import { openBenchEscrow, startDevnetChild } from './devnet-child.js';
import { chatPost, compare, formatLoad, type LoadResult, runLoad } from './load.js';

const ADMIN = `sk-admin-${randomBytes(24).toString('hex')}`;

async function processCounters(url: string): Promise<{ cpuSeconds: number; rssBytes: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const value = (name: string) =>
    Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)$`, 'm').exec(text)?.[1] ?? NaN);
  return {
    cpuSeconds: value('devshard_gateway_process_cpu_seconds_total'),
    rssBytes: value('devshard_gateway_process_resident_memory_bytes'),
  };
}

/**
 * The proxy's DATABASE_URL and REDIS_URL: TCP to the test servers, or their Unix sockets when
 * BENCH_PG_SOCKET_DIR (e.g. /var/run/postgresql) / BENCH_REDIS_SOCKET (the unixsocket of the Redis
 * that TEST_REDIS_URL names) are set, to measure what the sockets save (apps/proxy/README.md).
 */
function proxyServiceUrls(databaseUrl: string, redisUrl: string): { databaseUrl: string; redisUrl: string } {
  const pgDir = process.env.BENCH_PG_SOCKET_DIR;
  const redisSocket = process.env.BENCH_REDIS_SOCKET;
  const db = new URL(databaseUrl);
  if (pgDir) db.searchParams.set('host', pgDir);
  return {
    databaseUrl: db.toString(),
    redisUrl: redisSocket ? `unix://${redisSocket}` : redisUrl,
  };
}

/** Seconds of load before each measured path (BENCH_WARMUP_SECONDS, default 15 ≈ 2,000 requests). */
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 15);

export async function gatewayVsDirect(options: {
  seconds: number;
  concurrency: number;
  maxTokens: number;
  /** Mock-model latency (default zero: protocol overhead dominates). */
  model?: { ttftMs: number; perTokenMs: number };
  /** Escrows the proxy owns (default 1); the pool spreads requests over them. */
  escrows?: number;
  /** NODE_OPTIONS of the proxy process (BENCH_PROXY_NODE_OPTIONS is added after them). */
  proxyNodeOptions?: string;
  /** Instead of the runs: hand the ready proxy (its URL, pid and admin key) and the devnet (the mock
   * model's URL, the child's pid) to a probe (gateway-io.ts, gateway-streams.ts). */
  probe?: (url: string, pid: number, admin: string, devnet: { mlNode: string; pid: number }) => Promise<void>;
}): Promise<{ lines: string[]; results: LoadResult[] }> {
  const creator = PrivateKey.random();
  const devnet = await startDevnetChild({
    BLOCK_INTERVAL_MS: '100',
    MODEL_TTFT_MS: String(options.model?.ttftMs ?? 0),
    MODEL_PER_TOKEN_MS: String(options.model?.perTokenMs ?? 0),
    DEVSHARD_PRIVATE_KEY: creator.exportHex(),
  });
  const [db, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
  const storeSql = postgres(db.url, { max: 2, onnotice: () => {} });
  let proxy: ReturnType<typeof startTsProcess> | undefined;
  try {
    const client = createChainClient({ chainRest: devnet.urls.chainRest, publicApi: devnet.urls.node });
    for (let n = 0; n < (options.escrows ?? 1); n++) {
      const { escrowId, row, version, record } = await openBenchEscrow(client, creator);
      await new PostgresSessionStore(storeSql).create(record);
      await insertEscrowRows(db.sql, [
        {
          escrowId,
          modelId: QWEN_MODEL,
          creator: row.creator,
          amount: row.amount,
          epochIndex: row.epochIndex,
          version,
        },
      ]);
    }
    const port = await freePort();
    const env = {
      DEVSHARD_ADMIN_API_KEY: ADMIN,
      DEVSHARDS_JSON: '[]',
      DEVSHARD_PRIVATE_KEY: creator.exportHex(),
      DEVSHARD_CHAIN_REST: devnet.urls.chainRest,
      DEVSHARD_PUBLIC_API: devnet.urls.node,
      ...(({ databaseUrl, redisUrl }) => ({ DATABASE_URL: databaseUrl, REDIS_URL: redisUrl }))(
        proxyServiceUrls(db.url, redis.url),
      ),
      REDIS_KEY_PREFIX: redis.prefix,
      DEVSHARD_PORT: String(port),
      GATEWAY_LISTEN_HOST: '127.0.0.1',
      GATEWAY_PROXY_INTERNAL_URL: `http://127.0.0.1:${port}`,
      GATEWAY_ALLOW_PRIVATE_HOSTS: 'on',
      GATEWAY_MAX_CONCURRENT_REQUESTS: '4096',
      LOG_LEVEL: 'warn',
      // e.g. `--import ./profiler-preload.mjs` to profile the proxy (--cpu-prof is refused in NODE_OPTIONS).
      NODE_OPTIONS: [options.proxyNodeOptions, process.env.BENCH_PROXY_NODE_OPTIONS]
        .filter(Boolean)
        .join(' '),
    };
    await bootstrapSettings(db.db, loadConfig(env));
    proxy = startTsProcess('apps/proxy/src/main.ts', env, { runtime: benchRuntime() });
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 30_000;
    for (;;) {
      const status = await fetch(`${url}/v1/status`)
        .then((r) => r.json() as Promise<{ runtimes?: { status: string }[] }>)
        .catch(() => undefined);
      const serving = status?.runtimes?.filter((r) => r.status === 'serving').length ?? 0;
      if (serving >= (options.escrows ?? 1)) break;
      if (Date.now() > deadline) throw new Error(`the proxy did not own the escrow:\n${proxy.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }

    if (options.probe) {
      await options.probe(url, proxy.child.pid!, ADMIN, { mlNode: devnet.urls.mlNode, pid: devnet.pid });
      return { lines: [], results: [] };
    }
    let i = 0;
    const body = () =>
      JSON.stringify({
        model: QWEN_MODEL,
        messages: [{ role: 'user', content: `List three colours (${i++}).` }],
        max_tokens: options.maxTokens,
      });
    const viaGateway = chatPost('gateway', url, body, ADMIN);
    const direct = chatPost('direct', devnet.urls.mlNode, body);

    // V8 keeps optimizing the request path for ~2,000 requests: a short warm-up measured TurboFan
    // compiling in the helper threads (1.4 ms per request at 600 requests, 0.46 ms after 3,000).
    await runLoad('warm-up', viaGateway, { concurrency: 4, seconds: WARMUP_SECONDS });
    await runLoad('warm-up', direct, { concurrency: 4, seconds: WARMUP_SECONDS });
    const lines: string[] = [
      `gateway (proxy process: auth, Redis admission, signing, Postgres write-ahead) vs direct to the mock model, ` +
        `zero-latency model, max_tokens ${options.maxTokens}, ${options.seconds} s each`,
    ];
    const results: LoadResult[] = [];
    for (const concurrency of [1, options.concurrency]) {
      const load = { concurrency, seconds: options.seconds };
      const d = await runLoad(`direct to the mock model, c=${concurrency}`, direct, load);
      const before = await processCounters(url);
      const g = await runLoad(`through the gateway, c=${concurrency}`, viaGateway, load);
      const after = await processCounters(url);
      const cpuUs = ((after.cpuSeconds - before.cpuSeconds) * 1e6) / Math.max(1, g.requests);
      lines.push(
        `  ${formatLoad(d)}`,
        `  ${formatLoad(g)}`,
        compare(d, g),
        `  proxy CPU ${cpuUs.toFixed(0)} µs per request; proxy RSS ${(after.rssBytes / 2 ** 20).toFixed(0)} MiB`,
      );
      results.push(d, g);
    }
    // Time to the first streamed chunk, one request at a time: the added TTFT.
    const ttft = async (target: string, headers: Record<string, string>) => {
      const times: number[] = [];
      const end = performance.now() + options.seconds * 1000;
      while (performance.now() < end) {
        const t0 = performance.now();
        const res = await fetch(target, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({
            model: QWEN_MODEL,
            messages: [{ role: 'user', content: `Stream three colours (${i++}).` }],
            max_tokens: options.maxTokens,
            stream: true,
          }),
        });
        const reader = res.body!.getReader();
        let first = true;
        for (;;) {
          const { done } = await reader.read();
          if (first) {
            times.push(performance.now() - t0);
            first = false;
          }
          if (done) break;
        }
      }
      times.sort((a, b) => a - b);
      return { p50: times[Math.floor((times.length - 1) / 2)] ?? Number.NaN, n: times.length };
    };
    const ttftDirect = await ttft(`${devnet.urls.mlNode}/v1/chat/completions`, {});
    const ttftGateway = await ttft(`${url}/v1/chat/completions`, { authorization: `Bearer ${ADMIN}` });
    lines.push(
      `  streams, c=1: time to first chunk p50 direct ${ttftDirect.p50.toFixed(2)} ms (${ttftDirect.n}), ` +
        `through the gateway ${ttftGateway.p50.toFixed(2)} ms (${ttftGateway.n}); added TTFT ${(ttftGateway.p50 - ttftDirect.p50).toFixed(2)} ms`,
    );
    return { lines, results };
  } finally {
    await proxy?.stop('SIGTERM');
    await storeSql.end({ timeout: 5 });
    await Promise.allSettled([db.drop(), redis.cleanup(), devnet.close()]);
  }
}
