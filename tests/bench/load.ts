// A closed-loop load generator: `concurrency` loops each issue one request, wait for it, repeat,
// for `seconds`. Latencies are per request, as the client sees them; CPU is this process's (the
// gateway side: session, transport and the load loop itself), main thread and all threads.
import { readFileSync } from 'node:fs';

/** CPU ns of the main thread (Linux schedstat), 0 elsewhere. */
function mainThreadNs(): number {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return 0;
  }
}

export interface LoadResult {
  label: string;
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50: number;
  p95: number;
  p99: number;
  /** CPU µs of this process per completed request: main thread, and all threads (GC included). */
  mainCpuUs: number;
  processCpuUs: number;
  /** The first error's message, to tell a broken run from a slow one. */
  firstError?: string;
}

export async function runLoad(
  label: string,
  once: () => Promise<void>,
  options: { concurrency: number; seconds: number },
): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const started = performance.now();
  const main0 = mainThreadNs();
  const cpu0 = process.cpuUsage();
  const end = started + options.seconds * 1000;
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        try {
          await once();
          latencies.push(performance.now() - t0);
        } catch (err) {
          errors++;
          firstError ??= err instanceof Error ? err.message : String(err);
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const done = Math.max(1, latencies.length);
  const mainCpuUs = (mainThreadNs() - main0) / 1_000 / done;
  const processCpuUs = (cpu.user + cpu.system) / done;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.floor((latencies.length - 1) * p)] ?? Number.NaN;
  return {
    label,
    requests: latencies.length,
    errors,
    seconds,
    rps: latencies.length / seconds,
    p50: pct(0.5),
    p95: pct(0.95),
    p99: pct(0.99),
    mainCpuUs,
    processCpuUs,
    ...(firstError ? { firstError } : {}),
  };
}

export function formatLoad(r: LoadResult): string {
  const ms = (x: number) => `${x.toFixed(2)} ms`.padStart(10);
  const line = `${r.label.padEnd(44)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${ms(r.p50)}  p95 ${ms(r.p95)}  p99 ${ms(r.p99)}  CPU/req main ${r.mainCpuUs.toFixed(0)} µs, process ${r.processCpuUs.toFixed(0)} µs  (${r.requests} ok, ${r.errors} errors)`;
  return r.firstError ? `${line}\n    first error: ${r.firstError}` : line;
}

/** gateway-vs-direct summary: throughput ratio and added latency at the median and the tail. */
export function compare(direct: LoadResult, through: LoadResult): string {
  return (
    `  ratio: ${(through.rps / direct.rps).toFixed(3)} of direct throughput; ` +
    `added latency: p50 +${(through.p50 - direct.p50).toFixed(2)} ms, p95 +${(through.p95 - direct.p95).toFixed(2)} ms, p99 +${(through.p99 - direct.p99).toFixed(2)} ms`
  );
}

/**
 * One chat completion POSTed to `url` as a load step: the gateway with `key`, the mock model directly
 * without one. The whole answer is read; anything but 200 fails the step, naming `what`.
 */
export function chatPost(what: string, url: string, body: () => string, key?: string): () => Promise<void> {
  const headers = { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) };
  return async () => {
    const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers, body: body() });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${what}: HTTP ${res.status} ${text.slice(0, 200)}`);
  };
}
