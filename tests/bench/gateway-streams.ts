// How many concurrent SSE streams one proxy replica carries (spec §2.7 streaming, §8 limits): waves
// of 16…512 streaming chat completions launched at once against a mock model with a realistic
// latency, first straight to the model, then through the proxy process (gateway-vs-direct's setup,
// its probe hook, several escrows so the pool spreads the composes). Per wave: streams completed
// and failed (a failure is counted and its message shown, never thrown), how fast they started,
// added time to first chunk, the gap between chunk arrivals (a buffering proxy shows long gaps and
// several events per read), proxy and devnet CPU per stream from /proc, proxy RSS and its growth
// per concurrent stream, and the proxy's event-loop delay from its /metrics (prom-client resets
// that histogram on every scrape, so a scrape before the wave scopes it). Nothing is asserted.
// Run: `pnpm bench:streams`; environment BENCH_STREAMS (levels, default 16,64,256,512),
// BENCH_STREAM_TTFT_MS (200), BENCH_STREAM_PER_TOKEN_MS (a comma list, one scenario each, default
// 20,200: a realistic token rate, then streams long enough that a whole wave is open at once),
// BENCH_STREAM_TOKENS (64, the most the mock model writes: its completion is 8–64 tokens by prompt,
// so prompts are picked that reach the length asked), BENCH_STREAM_ESCROWS (4).
import http from 'node:http';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { MockModel, QWEN_MODEL } from '@gonka-gateway/devnet';
import { gatewayVsDirect } from './gateway-vs-direct.js';
import { processCpuUs, rssBytes } from './proc-stats.js';

/** The mock model's longest completion (packages/devnet mock-model.ts: 8–64 tokens by prompt). */
const MOCK_MAX_TOKENS = 64;

export interface StreamsOptions {
  levels: number[];
  ttftMs: number;
  /** One scenario per value. */
  perTokenMs: number[];
  tokens: number;
  escrows: number;
}

export function streamsOptionsFromEnv(env = process.env): StreamsOptions {
  return {
    levels: (env.BENCH_STREAMS ?? '16,64,256,512').split(',').filter(Boolean).map(Number),
    ttftMs: Number(env.BENCH_STREAM_TTFT_MS ?? 200),
    perTokenMs: (env.BENCH_STREAM_PER_TOKEN_MS ?? '20,200').split(',').filter(Boolean).map(Number),
    tokens: Math.min(MOCK_MAX_TOKENS, Number(env.BENCH_STREAM_TOKENS ?? MOCK_MAX_TOKENS)),
    escrows: Number(env.BENCH_STREAM_ESCROWS ?? 4),
  };
}

/** One stream as the client saw it; times are performance.now() ms. */
interface StreamRun {
  error?: string;
  sent: number;
  first?: number;
  end: number;
  /** ms between one arrival of body bytes and the next, and when each gap ended. */
  gaps: number[];
  gapAt: number[];
  /** SSE `data:` events (content, role and usage frames), and the socket reads that carried them. */
  events: number;
  reads: number;
}

/** Node's http client: one socket per stream, far cheaper per chunk than fetch's web streams. */
const agent = new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

function oneStream(
  url: string,
  headers: Record<string, string>,
  body: string,
  live: { streaming: number },
): Promise<StreamRun> {
  return new Promise((resolve) => {
    const run: StreamRun = { sent: performance.now(), end: 0, gaps: [], gapAt: [], events: 0, reads: 0 };
    let last = 0;
    let tail = '';
    let sawDone = false;
    let errorFrame: string | undefined;
    let settled = false;
    const settle = (error?: string) => {
      if (settled) return;
      settled = true;
      if (run.first !== undefined) live.streaming--;
      run.end = performance.now();
      if (error) run.error = error;
      resolve(run);
    };
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          ...headers,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        res.setEncoding('utf8');
        if (res.statusCode !== 200) {
          let text = '';
          res.on('data', (c: string) => {
            text += c;
          });
          res.on('end', () => settle(`HTTP ${res.statusCode} ${text.slice(0, 160)}`));
          return;
        }
        res.on('data', (chunk: string) => {
          const now = performance.now();
          if (run.first === undefined) {
            run.first = now;
            live.streaming++;
          } else {
            run.gaps.push(now - last);
            run.gapAt.push(now);
          }
          last = now;
          run.reads++;
          tail += chunk;
          let cut = tail.indexOf('\n\n');
          while (cut >= 0) {
            const event = tail.slice(0, cut);
            tail = tail.slice(cut + 2);
            cut = tail.indexOf('\n\n');
            if (event === 'data: [DONE]') sawDone = true;
            else if (event.startsWith('data: {"error"')) errorFrame ??= event.slice(6, 166);
            else if (event.startsWith('data: ')) run.events++;
          }
        });
        res.on('end', () =>
          settle(
            errorFrame ? `error frame ${errorFrame}` : sawDone ? undefined : 'stream ended without [DONE]',
          ),
        );
        res.on('error', (e) => settle(e.message));
      },
    );
    req.on('error', (e) => settle(e.message));
    req.end(body);
  });
}

interface Wave {
  n: number;
  ok: number;
  failed: number;
  errors: Map<string, number>;
  /** From launch to the last stream's first chunk, and the starts per second over that span. */
  startSpanMs: number;
  startRate: number;
  ttftP50: number;
  ttftP99: number;
  gapP50: number;
  gapP99: number;
  gapMax: number;
  steadyGapP99: number;
  eventsPerRead: number;
  eventsPerStream: number;
  wallMs: number;
  peakStreaming: number;
  devnetCpuUsPerStream: number;
  proxy?: {
    cpuUsPerStream: number;
    /** The same net of what the idle proxy burns in as long (timers, pool progress, metrics). */
    netCpuUsPerStream: number;
    /** V8 heap in use after a forced full GC, 1 s after the wave: what the proxy retains. */
    heapAfter: number;
    rssBefore: number;
    rssPeak: number;
    /** RSS at the sample with the most streams open: growth over rssBefore / peakStreaming = per stream. */
    rssAtPeakStreaming: number;
    rssAfter: number;
    loopP99Ms: number;
    loopMaxMs: number;
  };
}

const pct = (sorted: number[], p: number) => sorted[Math.floor((sorted.length - 1) * p)] ?? Number.NaN;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The proxy's event-loop delay since the previous scrape, and its V8 heap in use. */
async function scrape(url: string): Promise<{ p99Ms: number; maxMs: number; heapUsed: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const value = (name: string) =>
    Number(new RegExp(`^devshard_gateway_${name} ([0-9.e+-]+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  return {
    p99Ms: value('nodejs_eventloop_lag_p99_seconds') * 1000,
    maxMs: value('nodejs_eventloop_lag_max_seconds') * 1000,
    heapUsed: value('nodejs_heap_size_used_bytes'),
  };
}

async function wave(
  n: number,
  target: { url: string; headers: Record<string, string> },
  body: () => string,
  devnetPid: number,
  proxy?: { pid: number; url: string; idleCpuUsPerMs: number },
): Promise<Wave> {
  const live = { streaming: 0 };
  let peakStreaming = 0;
  let rssPeak = 0;
  let rssAtPeakStreaming = 0;
  if (proxy) await scrape(proxy.url); // resets the histogram: what follows is this wave's
  const rssBefore = proxy ? rssBytes(proxy.pid) : 0;
  const cpu0 = proxy ? processCpuUs(proxy.pid) : 0;
  const devCpu0 = processCpuUs(devnetPid);
  const sample = () => {
    const rss = proxy ? rssBytes(proxy.pid) : 0;
    rssPeak = Math.max(rssPeak, rss);
    if (live.streaming > peakStreaming) [peakStreaming, rssAtPeakStreaming] = [live.streaming, rss];
  };
  const sampler = setInterval(sample, 100);
  const t0 = performance.now();
  const runs = await Promise.all(
    Array.from({ length: n }, () =>
      oneStream(`${target.url}/v1/chat/completions`, target.headers, body(), live),
    ),
  );
  const wallMs = performance.now() - t0;
  clearInterval(sampler);
  sample();
  const cpuUs = proxy ? processCpuUs(proxy.pid) - cpu0 : 0;
  const devCpuUs = processCpuUs(devnetPid) - devCpu0;
  const loop = proxy ? await scrape(proxy.url) : undefined;
  await sleep(1_000); // what the proxy still holds once the streams and their trailing work are done
  if (proxy) process.kill(proxy.pid, 'SIGUSR2'); // a full GC (gc-on-signal.mjs): retained heap only
  await sleep(500);
  const heapAfter = proxy ? (await scrape(proxy.url)).heapUsed : 0;
  const ok = runs.filter((r) => r.error === undefined);
  const errors = new Map<string, number>();
  for (const r of runs) if (r.error) errors.set(r.error, (errors.get(r.error) ?? 0) + 1);
  const started = runs.filter((r) => r.first !== undefined);
  const ttft = started.map((r) => r.first! - r.sent).sort((a, b) => a - b);
  const gaps = runs.flatMap((r) => r.gaps).sort((a, b) => a - b);
  const startSpanMs = Math.max(...started.map((r) => r.first! - t0));
  // Gaps of chunks that arrived once every stream had started: streaming alone, no composes.
  const steadyGaps = runs
    .flatMap((r) => r.gaps.filter((_, k) => r.gapAt[k]! > t0 + startSpanMs))
    .sort((a, b) => a - b);
  const reads = runs.reduce((s, r) => s + r.reads, 0);
  const done = Math.max(1, ok.length);
  return {
    n,
    ok: ok.length,
    failed: n - ok.length,
    errors,
    startSpanMs,
    startRate: started.length / (startSpanMs / 1000),
    ttftP50: pct(ttft, 0.5),
    ttftP99: pct(ttft, 0.99),
    gapP50: pct(gaps, 0.5),
    gapP99: pct(gaps, 0.99),
    gapMax: gaps.at(-1) ?? Number.NaN,
    steadyGapP99: pct(steadyGaps, 0.99),
    eventsPerRead: runs.reduce((s, r) => s + r.events, 0) / Math.max(1, reads),
    eventsPerStream: ok.reduce((s, r) => s + r.events, 0) / done,
    wallMs,
    peakStreaming,
    devnetCpuUsPerStream: devCpuUs / done,
    ...(proxy && loop
      ? {
          proxy: {
            cpuUsPerStream: cpuUs / done,
            netCpuUsPerStream: (cpuUs - proxy.idleCpuUsPerMs * wallMs) / done,
            heapAfter,
            rssBefore,
            rssPeak,
            rssAtPeakStreaming,
            rssAfter: rssBytes(proxy.pid),
            loopP99Ms: loop.p99Ms,
            loopMaxMs: loop.maxMs,
          },
        }
      : {}),
  };
}

const ms = (v: number) => `${v.toFixed(v < 10 ? 1 : 0)} ms`;
const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;

function formatWave(label: string, w: Wave): string[] {
  const lines = [
    `  ${label.padEnd(8)} ${w.ok}/${w.n} completed, ${w.failed} failed; all started within ${ms(w.startSpanMs)} ` +
      `(${w.startRate.toFixed(0)} starts/s), peak ${w.peakStreaming} streaming; TTFT p50 ${ms(w.ttftP50)} p99 ${ms(w.ttftP99)}; ` +
      `chunk gap p50 ${ms(w.gapP50)} p99 ${ms(w.gapP99)} (${ms(w.steadyGapP99)} once all started) max ${ms(w.gapMax)}, ${w.eventsPerStream.toFixed(0)} events per stream, ${w.eventsPerRead.toFixed(2)} per read; ` +
      `wave ${(w.wallMs / 1000).toFixed(1)} s; devnet CPU ${(w.devnetCpuUsPerStream / 1000).toFixed(1)} ms per stream`,
  ];
  if (w.proxy) {
    const p = w.proxy;
    const perStream = (p.rssAtPeakStreaming - p.rssBefore) / Math.max(1, w.peakStreaming);
    lines.push(
      `           proxy CPU ${(p.cpuUsPerStream / 1000).toFixed(1)} ms per stream (${(p.netCpuUsPerStream / 1000).toFixed(1)} net of idle); ` +
        `RSS ${mib(p.rssBefore)} before, ` +
        `${mib(p.rssAtPeakStreaming)} at ${w.peakStreaming} streaming (+${(perStream / 1024).toFixed(0)} KiB per concurrent stream), ` +
        `peak ${mib(p.rssPeak)}, ` +
        `${mib(p.rssAfter)} 1 s after (heap after a full GC ${mib(p.heapAfter)}); event-loop delay p99 ${ms(p.loopP99Ms)} max ${ms(p.loopMaxMs)}`,
    );
  }
  for (const [message, count] of [...w.errors].sort((a, b) => b[1] - a[1]).slice(0, 3)) {
    lines.push(`           ${count} × ${message}`);
  }
  return lines;
}

export async function gatewayStreams(options: StreamsOptions): Promise<string[]> {
  const lines: string[] = [];
  for (const perTokenMs of options.perTokenMs) {
    lines.push(...(await scenario(options, perTokenMs)), '');
  }
  agent.destroy();
  return lines.slice(0, -1);
}

async function scenario(options: StreamsOptions, perTokenMs: number): Promise<string[]> {
  const lines: string[] = [];
  const load = () =>
    `load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')} on ${cpus().length} cores`;
  // Prompts whose completion reaches `tokens` (the mock's length depends on the prompt alone).
  const model = new MockModel();
  let i = 0;
  const body = () => {
    for (;;) {
      const messages = [{ role: 'user', content: `Tell a long story about colours (${i++}).` }];
      if (model.complete({ model: QWEN_MODEL, messages }).completionTokens < options.tokens) continue;
      return JSON.stringify({ model: QWEN_MODEL, messages, max_tokens: options.tokens, stream: true });
    }
  };
  await gatewayVsDirect({
    seconds: 1,
    concurrency: 1,
    maxTokens: options.tokens,
    model: { ttftMs: options.ttftMs, perTokenMs },
    escrows: options.escrows,
    proxyNodeOptions: `--expose-gc --import ${fileURLToPath(new URL('./gc-on-signal.mjs', import.meta.url))}`,
    probe: async (url, pid, admin, devnet) => {
      const direct = { url: devnet.mlNode.replace(/\/$/, ''), headers: {} };
      const gateway = { url, headers: { authorization: `Bearer ${admin}` } };
      // Warm-up: JIT, connection pools, every escrow's first diff.
      await wave(4 * options.escrows, gateway, body, devnet.pid);
      await wave(16, direct, body, devnet.pid);
      await sleep(1_000); // the warm-up's trailing work (Finish, pool progress) settles first
      const idle0 = processCpuUs(pid);
      await sleep(2_000);
      const idleCpuUsPerMs = (processCpuUs(pid) - idle0) / 2_000;
      const streamS = (options.ttftMs + perTokenMs * (options.tokens - 1)) / 1000;
      lines.push(
        `concurrent SSE streams through one proxy replica (auth, Redis admission, signing, Postgres ` +
          `write-ahead; ${options.escrows} escrow${options.escrows === 1 ? '' : 's'}) vs direct to the mock model: TTFT ${options.ttftMs} ms, ` +
          `${perTokenMs} ms per token, ${options.tokens} tokens (a ${streamS.toFixed(1)} s stream); ` +
          `each wave launches all its streams at once; the idle proxy burns ${idleCpuUsPerMs.toFixed(0)} ms CPU per s`,
      );
      for (const n of options.levels) {
        const loadBefore = load();
        const d = await wave(n, direct, body, devnet.pid);
        const g = await wave(n, gateway, body, devnet.pid, { pid, url, idleCpuUsPerMs });
        lines.push(`c=${n} (${loadBefore})`, ...formatWave('direct', d), ...formatWave('gateway', g));
        lines.push(
          `  ratio: start rate ${(g.startRate / d.startRate).toFixed(2)} of direct; added TTFT p50 ` +
            `+${(g.ttftP50 - d.ttftP50).toFixed(1)} ms, p99 +${(g.ttftP99 - d.ttftP99).toFixed(1)} ms; added chunk gap ` +
            `p99 +${(g.gapP99 - d.gapP99).toFixed(1)} ms; wave ${(g.wallMs / d.wallMs).toFixed(2)}× as long`,
        );
        process.stderr.write(`gateway-streams: ${perTokenMs} ms per token, c=${n} done\n`);
      }
      lines.push(`(${load()} at the end)`);
    },
  });
  return lines;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const line of await gatewayStreams(streamsOptionsFromEnv())) process.stdout.write(`${line}\n`);
  process.exit(0);
}
