// What a proxy replica costs while it serves nothing: the CPU its background loops (lease renewal,
// claim loop, pool snapshot, usage stream, settings, PoC watch) and V8/libuv threads burn per second
// of wall time, by thread. Every replica pays it all the time, and the whole-process CPU per request
// of gateway-vs-direct (which divides by few requests) includes it. Same setup as gateway-io (one
// owned escrow, the devnet in its own child process), with no traffic.
// Run: `pnpm bench:idle` (BENCH_IDLE_SECONDS window, default 30; BENCH_IDLE_SETTLE seconds before it, default 10).
import { readFileSync } from 'node:fs';
import { gatewayVsDirect } from './gateway-vs-direct.js';
import { TICK_US, threadTicks } from './proc-stats.js';

const SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 30);
const SETTLE = Number(process.env.BENCH_IDLE_SETTLE ?? 10);

function threadName(pid: number, tid: string): string {
  try {
    return readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
  } catch {
    return '?';
  }
}

await gatewayVsDirect({
  seconds: 1,
  concurrency: 1,
  maxTokens: 64,
  probe: async (_url, pid) => {
    // Start-up work (module loading, the first claim, JIT of the loops) is not idle cost.
    await new Promise((r) => setTimeout(r, SETTLE * 1_000));
    const load = readFileSync('/proc/loadavg', 'utf8').trim();
    const before = threadTicks(pid);
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, SECONDS * 1_000));
    const after = threadTicks(pid);
    const seconds = (performance.now() - t0) / 1_000;
    const perSecond = (ticks: number) => (ticks * TICK_US) / 1_000 / seconds;
    const byName = new Map<string, number>();
    let total = 0;
    for (const [tid, t] of after) {
      const b = before.get(tid) ?? { user: 0, sys: 0 };
      const ticks = t.user - b.user + t.sys - b.sys;
      const name = Number(tid) === pid ? 'main' : threadName(pid, tid);
      byName.set(name, (byName.get(name) ?? 0) + ticks);
      total += ticks;
    }
    const threads = [...byName]
      .filter(([, ticks]) => ticks > 0)
      .sort((a, b) => b[1] - a[1])
      .map(([name, ticks]) => `${name} ${perSecond(ticks).toFixed(1)}`)
      .join(', ');
    console.log(`idle proxy, ${seconds.toFixed(0)} s window (loadavg before: ${load})`);
    console.log(`  CPU ms per second: total ${perSecond(total).toFixed(1)}; by thread: ${threads}`);
  },
});
process.exit(0);
