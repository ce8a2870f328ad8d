// Throughput of the gateway under load, by concurrency and by escrows owned (docs/performance.md):
// the proxy as its own process(es) on a devnet in a child process (devnet-child.ts), real Postgres
// and Redis, closed-loop clients (load.ts) at each concurrency, the same requests straight to the
// devnet's mock model beside them. Per escrow count and concurrency, in one run: req/s through the
// gateway and direct, per-escrow req/s (an escrow's diffs are composed one at a time and written in
// nonce order, several per write-ahead: architecture §2.3), p50/p99 as the client sees them, the proxy's CPU per request (every thread of every
// replica process from /proc, idle background included), the devnet child's CPU per request (hosts,
// chain and mock model; the mock model's own share is what the direct run costs it per request, so
// the hosts' share is the difference), and with several replicas the forwarded share: requests are
// sent round robin to the replicas directly (as a load balancer would), and share = Σ forwarded ÷
// Σ served over the replicas, from their /metrics; and per request the Redis commands and read
// events (server-wide INFO stats) and the proxy's write syscalls (/proc/<pid>/io), the round trips
// the proxy makes. Beside them, at each concurrency, the protocol floor (floor-forwarder.ts: only
// the round trips and curve operations every chat request must make, sharing its statements and
// Redis writes as the proxy does) on the same requests, so that the proxy's CPU per request reads
// against what no implementation on this machine goes below at that concurrency. Nothing is
// asserted: the figures go to the docs.
// Run: `pnpm bench:load`; environment BENCH_SECONDS (per run, default 5), BENCH_CONCURRENCY
// (a comma list, default 1,16,64), BENCH_ESCROWS (a comma list, default 1,8), BENCH_REPLICAS
// (proxy processes, default 1), BENCH_WARMUP_SECONDS (load at c=4 before the runs of each escrow
// count, default 15 ≈ the ~2,000 requests V8 takes to compile the request path), and
// BENCH_PG_SOCKET_DIR, BENCH_REDIS_SOCKET, BENCH_PROXY_NODE_OPTIONS, BENCH_FLOOR_NODE_OPTIONS as the
// other proxy benches.
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import { type ChainClient, createChainClient, PrivateKey } from '@gonka-gateway/chain';
import { startTsProcess, type TsProcess } from '@gonka-gateway/deploy';
import { QWEN_MODEL } from '@gonka-gateway/devnet';
import { PostgresSessionStore } from '@gonka-gateway/escrow-runtime';
import { insertEscrowRows } from '@gonka-gateway/escrow-runtime/testing';
import { bootstrapSettings, loadConfig } from '@gonka-gateway/shared';
import { createTestDatabase, createTestRedis, freePort, type TestRedis } from '@gonka-gateway/shared/testing';
import postgres from 'postgres';
import { benchRuntime } from './bench-runtime.js';
import { type DevnetChild, openBenchEscrow, startDevnetChild } from './devnet-child.js';
import { startForwarder } from './floor-process.js';
import { chatPost, type LoadResult, runLoad } from './load.js';
import { processCpuUs, rssBytes, writeSyscalls } from './proc-stats.js';

export interface GatewayLoadOptions {
  seconds: number;
  concurrencies: number[];
  escrows: number[];
  replicas: number;
  warmupSeconds: number;
}

const list = (value: string) => value.split(',').filter(Boolean).map(Number);

export function loadOptionsFromEnv(env = process.env): GatewayLoadOptions {
  return {
    seconds: Number(env.BENCH_SECONDS ?? 5),
    concurrencies: list(env.BENCH_CONCURRENCY ?? '1,16,64'),
    escrows: list(env.BENCH_ESCROWS ?? '1,8'),
    replicas: Math.max(1, Number(env.BENCH_REPLICAS ?? 1)),
    warmupSeconds: Number(env.BENCH_WARMUP_SECONDS ?? 15),
  };
}

const MAX_TOKENS = 64;

/** Sum of every series of a counter in a replica's /metrics (labels by route, model, status). */
async function counter(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)$`, 'gm'))) {
    sum += Number(m[1]);
  }
  return sum;
}

/** The proxy's DATABASE_URL and REDIS_URL, over Unix sockets when asked (as gateway-vs-direct.ts). */
function proxyServiceUrls(
  databaseUrl: string,
  redisUrl: string,
): { DATABASE_URL: string; REDIS_URL: string } {
  const pgDir = process.env.BENCH_PG_SOCKET_DIR;
  const redisSocket = process.env.BENCH_REDIS_SOCKET;
  const db = new URL(databaseUrl);
  if (pgDir) db.searchParams.set('host', pgDir);
  return { DATABASE_URL: db.toString(), REDIS_URL: redisSocket ? `unix://${redisSocket}` : redisUrl };
}

/**
 * Opens an escrow, retried: several in a row on the devnet each wait for a block, and a broadcast
 * that raced the previous one's sequence or missed its inclusion window is worth another try rather
 * than a lost run.
 */
async function openEscrowRetried(client: ChainClient, creator: PrivateKey) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await openBenchEscrow(client, creator);
    } catch (err) {
      if (attempt >= 4) throw err;
      process.stderr.write(`gateway-load: escrow creation failed (${String(err)}), retrying\n`);
      await new Promise((r) => setTimeout(r, 500 * attempt));
    }
  }
}

interface Replica {
  url: string;
  proc: TsProcess;
}

/** Escrows each replica serves, from its /v1/status (0 while it is not answering). */
async function owned(replicas: Replica[]): Promise<number[]> {
  return Promise.all(
    replicas.map(async (r) => {
      const status = await fetch(`${r.url}/v1/status`)
        .then((res) => res.json() as Promise<{ runtimes?: { status: string }[] }>)
        .catch(() => undefined);
      return status?.runtimes?.filter((x) => x.status === 'serving').length ?? 0;
    }),
  );
}

interface Row {
  escrows: number;
  concurrency: number;
  direct: LoadResult;
  gateway: LoadResult;
  floor: LoadResult;
  proxyCpuUs: number;
  floorCpuUs: number;
  devnetCpuUs: number;
  mockCpuUs: number;
  forwardedShare: number;
  proxyRssMiB: number;
  /** Redis commands and Redis read events (≈ batches the clients wrote) per gateway request. */
  redisCommands: number;
  redisReads: number;
  proxyWrites: number;
  load: string;
}

/** Server-wide Redis counters (INFO stats): commands run and read events (one per batch a client wrote). */
async function redisStats(redis: TestRedis['redis']): Promise<{ commands: number; reads: number }> {
  const info = await redis.info('stats');
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? Number.NaN);
  return { commands: field('total_commands_processed'), reads: field('total_reads_processed') };
}

const loadNow = () =>
  `load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`;

/** One escrow count: fresh database, Redis prefix, escrows and proxy replicas on the shared devnet. */
async function oneEscrowCount(
  options: GatewayLoadOptions,
  devnet: DevnetChild,
  creator: PrivateKey,
  escrows: number,
  log: (line: string) => void,
): Promise<Row[]> {
  const admin = `sk-admin-${randomBytes(24).toString('hex')}`;
  const [db, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
  const storeSql = postgres(db.url, { max: 2, onnotice: () => {} });
  const replicas: Replica[] = [];
  let floorProcess: TsProcess | undefined;
  try {
    const client = createChainClient({ chainRest: devnet.urls.chainRest, publicApi: devnet.urls.node });
    for (let n = 0; n < escrows; n++) {
      const { escrowId, row, version, record } = await openEscrowRetried(client, creator);
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
    const envFor = (port: number, i: number) => ({
      DEVSHARD_ADMIN_API_KEY: admin,
      DEVSHARDS_JSON: '[]',
      DEVSHARD_PRIVATE_KEY: creator.exportHex(),
      DEVSHARD_CHAIN_REST: devnet.urls.chainRest,
      DEVSHARD_PUBLIC_API: devnet.urls.node,
      ...proxyServiceUrls(db.url, redis.url),
      REDIS_KEY_PREFIX: redis.prefix,
      DEVSHARD_PORT: String(port),
      GATEWAY_LISTEN_HOST: '127.0.0.1',
      GATEWAY_PROXY_INTERNAL_URL: `http://127.0.0.1:${port}`,
      GATEWAY_REPLICA_ID: `bench-load-${i}-${port}`,
      GATEWAY_ALLOW_PRIVATE_HOSTS: 'on',
      GATEWAY_MAX_CONCURRENT_REQUESTS: '4096',
      LOG_LEVEL: 'warn',
      NODE_OPTIONS: process.env.BENCH_PROXY_NODE_OPTIONS ?? '',
    });
    const ports = await Promise.all(Array.from({ length: options.replicas }, () => freePort()));
    await bootstrapSettings(db.db, loadConfig(envFor(ports[0]!, 0)));
    for (const [i, port] of ports.entries()) {
      replicas.push({
        url: `http://127.0.0.1:${port}`,
        proc: startTsProcess('apps/proxy/src/main.ts', envFor(port, i), { runtime: benchRuntime() }),
      });
    }
    // Every escrow served, and spread: each replica at least its floor share (the claim loop's
    // fair share), so the forwarded share measures routing, not a claim still in progress. Spreading
    // waits out lease passes, hence the long deadline; past it the run goes on and says so.
    const floorShare = Math.floor(escrows / options.replicas);
    const deadline = Date.now() + 90_000;
    let counts: number[] = [];
    for (;;) {
      counts = await owned(replicas);
      const total = counts.reduce((a, b) => a + b, 0);
      if (total >= escrows && counts.every((c) => c >= floorShare)) break;
      const exited = replicas.find((r) => r.proc.child.exitCode !== null);
      if (exited) throw new Error(`a proxy exited:\n${exited.proc.output()}`);
      if (Date.now() > deadline) {
        if (total >= escrows) break;
        throw new Error(
          `the proxies did not own the escrows (${counts.join(', ')}):\n${replicas[0]!.proc.output()}`,
        );
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    log(
      `${escrows} escrow${escrows === 1 ? '' : 's'}: owned ${counts.join(' + ')} by ${options.replicas} replica(s); ${loadNow()}`,
    );

    let i = 0;
    const body = () =>
      JSON.stringify({
        model: QWEN_MODEL,
        messages: [{ role: 'user', content: `List three colours (${i++}).` }],
        max_tokens: MAX_TOKENS,
      });
    let next = 0;
    const posts = replicas.map((replica) => chatPost('gateway', replica.url, body, admin));
    const viaGateway = () => posts[next++ % posts.length]!();
    const direct = chatPost('direct', devnet.urls.mlNode, body);
    // The protocol floor on the same mock model, with its own tables and Redis keys.
    const [floorChild, floorPort] = await startForwarder('protocol', devnet.urls.mlNode, {
      FLOOR_DATABASE_URL: db.url,
      FLOOR_REDIS_URL: redis.url,
      FLOOR_REDIS_PREFIX: `${redis.prefix}floor:`,
    });
    floorProcess = floorChild;
    const floorPid = floorChild.child.pid!;
    const viaFloor = chatPost('protocol floor', `http://127.0.0.1:${floorPort}`, body);
    // V8 compiles the proxy's request path over its first ~2,000 requests: warm every replica (round
    // robin) before measuring, and the load generator's own direct path briefly.
    await runLoad('warm-up', viaGateway, { concurrency: 4, seconds: options.warmupSeconds });
    await runLoad('warm-up', direct, { concurrency: 4, seconds: Math.min(3, options.warmupSeconds) });
    await runLoad('warm-up', viaFloor, { concurrency: 4, seconds: Math.min(5, options.warmupSeconds) });

    const pids = replicas.map((r) => r.proc.child.pid!);
    const proxyCpu = () => pids.reduce((sum, pid) => sum + processCpuUs(pid), 0);
    const counters = async () => {
      let forwarded = 0;
      let served = 0;
      for (const r of replicas) {
        forwarded += await counter(r.url, 'devshard_gateway_forwarded_requests_total');
        served += await counter(r.url, 'devshard_gateway_requests_total');
      }
      return { forwarded, served };
    };
    const rows: Row[] = [];
    for (const concurrency of options.concurrencies) {
      const load = { concurrency, seconds: options.seconds };
      const before = loadNow();
      const devnet0 = processCpuUs(devnet.pid);
      const d = await runLoad(`direct, c=${concurrency}`, direct, load);
      const mockCpuUs = (processCpuUs(devnet.pid) - devnet0) / Math.max(1, d.requests);
      const c0 = await counters();
      const r0 = await redisStats(redis.redis);
      const w0 = pids.reduce((sum, pid) => sum + writeSyscalls(pid), 0);
      const proxy0 = proxyCpu();
      const devnet1 = processCpuUs(devnet.pid);
      const g = await runLoad(`gateway, c=${concurrency}`, viaGateway, load);
      const proxyCpuUs = (proxyCpu() - proxy0) / Math.max(1, g.requests);
      const devnetCpuUs = (processCpuUs(devnet.pid) - devnet1) / Math.max(1, g.requests);
      const w1 = pids.reduce((sum, pid) => sum + writeSyscalls(pid), 0);
      const r1 = await redisStats(redis.redis);
      const c1 = await counters();
      const served = c1.served - c0.served;
      const floor0 = processCpuUs(floorPid);
      const f = await runLoad(`protocol floor, c=${concurrency}`, viaFloor, load);
      const floorCpuUs = (processCpuUs(floorPid) - floor0) / Math.max(1, f.requests);
      rows.push({
        escrows,
        concurrency,
        direct: d,
        gateway: g,
        floor: f,
        proxyCpuUs,
        floorCpuUs,
        devnetCpuUs,
        mockCpuUs,
        forwardedShare: served > 0 ? (c1.forwarded - c0.forwarded) / served : Number.NaN,
        proxyRssMiB: pids.reduce((sum, pid) => sum + rssBytes(pid), 0) / 2 ** 20,
        redisCommands: (r1.commands - r0.commands) / Math.max(1, g.requests),
        redisReads: (r1.reads - r0.reads) / Math.max(1, g.requests),
        proxyWrites: (w1 - w0) / Math.max(1, g.requests),
        load: before,
      });
      if (g.firstError) log(`  gateway c=${concurrency}: ${g.errors} errors, first: ${g.firstError}`);
      if (d.firstError) log(`  direct c=${concurrency}: ${d.errors} errors, first: ${d.firstError}`);
      if (f.firstError) log(`  protocol floor c=${concurrency}: ${f.errors} errors, first: ${f.firstError}`);
      process.stderr.write(`gateway-load: ${escrows} escrows, c=${concurrency} done\n`);
    }
    return rows;
  } finally {
    await Promise.all([...replicas.map((r) => r.proc.stop('SIGTERM')), floorProcess?.stop()]);
    await storeSql.end({ timeout: 5 });
    await Promise.allSettled([db.drop(), redis.cleanup()]);
  }
}

export async function gatewayLoad(options: GatewayLoadOptions): Promise<string[]> {
  const lines: string[] = [];
  const log = (line: string) => {
    lines.push(line);
    process.stderr.write(`gateway-load: ${line}\n`);
  };
  const creator = PrivateKey.random();
  const devnet = await startDevnetChild({
    BLOCK_INTERVAL_MS: '100',
    MODEL_TTFT_MS: '0',
    MODEL_PER_TOKEN_MS: '0',
    DEVSHARD_PRIVATE_KEY: creator.exportHex(),
  });
  const rows: Row[] = [];
  try {
    for (const escrows of options.escrows)
      rows.push(...(await oneEscrowCount(options, devnet, creator, escrows, log)));
  } finally {
    await devnet.close();
  }
  const n = (x: number, digits = 0) => (Number.isFinite(x) ? x.toFixed(digits) : '–');
  const out = [
    `gateway under load (node ${process.version}): ${options.replicas} proxy replica(s)` +
      `${options.replicas > 1 ? ', requests round robin to them' : ''}, zero-latency mock model, ` +
      `max_tokens ${MAX_TOKENS}, non-streamed, ${options.seconds} s per run after ${options.warmupSeconds} s of warm-up at c=4; ` +
      `CPU per request from /proc (proxy: every replica process, background included; devnet: the child ` +
      `process, hosts + chain + mock model; hosts ≈ devnet − the mock model's CPU per request in the direct run)`,
    ...lines,
    '| escrows | c | direct req/s | gateway req/s | per escrow req/s | gateway p50 / p99 ms | direct p50 / p99 ms | proxy CPU µs/req | devnet CPU µs/req (hosts ≈) | forwarded share | proxy RSS MiB | errors | load before |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    out.push(
      `| ${r.escrows} | ${r.concurrency} | ${n(r.direct.rps)} | ${n(r.gateway.rps)} | ${n(r.gateway.rps / r.escrows, 1)} | ` +
        `${n(r.gateway.p50, 1)} / ${n(r.gateway.p99, 1)} | ${n(r.direct.p50, 2)} / ${n(r.direct.p99, 2)} | ` +
        `${n(r.proxyCpuUs)} | ${n(r.devnetCpuUs)} (${n(r.devnetCpuUs - r.mockCpuUs)}) | ${n(r.forwardedShare, 3)} | ` +
        `${n(r.proxyRssMiB)} | ${r.gateway.errors + r.direct.errors} | ${r.load.replace('load ', '')} |`,
    );
  }
  // Round trips: Redis counts a read event per batch a client wrote (the whole server's, so a
  // concurrent user of the same Redis shows up here), the proxy's write syscalls cover every socket.
  out.push(
    '',
    '| escrows | c | Redis commands / req | Redis read events / req | proxy write syscalls / req |',
    '|---|---|---|---|---|',
  );
  for (const r of rows) {
    out.push(
      `| ${r.escrows} | ${r.concurrency} | ${n(r.redisCommands, 2)} | ${n(r.redisReads, 2)} | ${n(r.proxyWrites, 2)} |`,
    );
  }
  // The proxy against the protocol floor run right after it at the same concurrency: what the
  // gateway's own code adds, the figure a change to it moves (the floor skips the devnet host).
  out.push(
    '',
    '| escrows | c | protocol floor req/s | floor CPU µs/req | proxy CPU µs/req | proxy ÷ floor | proxy − floor µs | floor errors |',
    '|---|---|---|---|---|---|---|---|',
  );
  for (const r of rows) {
    out.push(
      `| ${r.escrows} | ${r.concurrency} | ${n(r.floor.rps)} | ${n(r.floorCpuUs)} | ${n(r.proxyCpuUs)} | ` +
        `${n(r.proxyCpuUs / r.floorCpuUs, 2)} | ${n(r.proxyCpuUs - r.floorCpuUs)} | ${r.floor.errors} |`,
    );
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const options = loadOptionsFromEnv();
  process.stdout.write(
    `pnpm bench:load — node ${process.version}; BENCH_SECONDS=${options.seconds} BENCH_CONCURRENCY=${options.concurrencies.join(',')} ` +
      `BENCH_ESCROWS=${options.escrows.join(',')} BENCH_REPLICAS=${options.replicas} BENCH_WARMUP_SECONDS=${options.warmupSeconds}\n`,
  );
  for (const line of await gatewayLoad(options)) process.stdout.write(`${line}\n`);
  process.exit(0);
}
