// What one chat request costs the proxy process, by where it goes (docs/performance.md): CPU of the
// main thread against V8's helper threads, user against kernel time (from /proc, so it holds under
// load where a sampling profiler starves), and — when strace is installed — socket writes per
// request by peer (Postgres, Redis, hosts, client). Writes are what the store and admission layers
// are tuned on: a round trip less is CPU and latency less. Same setup as gateway-vs-direct (its
// probe hook).
// Run: `pnpm bench:gateway-io` (BENCH_REQUESTS, default 300; BENCH_WARMUP requests first, default 2,000;
// BENCH_STRACE=0 skips the write count; BENCH_STRACE=all counts every syscall per request, by name,
// and reads/writes by peer — the CPU figures of that run carry strace's own cost; BENCH_STRACE_KEEP=1
// keeps the trace file for reading).
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QWEN_MODEL } from '@gonka-gateway/devnet';
import { gatewayVsDirect } from './gateway-vs-direct.js';
import { TICK_US, threadTicks } from './proc-stats.js';

const N = Number(process.env.BENCH_REQUESTS ?? 300);
// Until V8 has optimized the request path (~2,000 requests) its compiler threads add ~1 ms per request.
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2_000);
// The test Redis (TEST_REDIS_URL) may be a private server on another port.
const REDIS_PORT = new URL(process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379').port || '6379';

/**
 * Socket fd → the peer of `pid`'s connections: the remote port of a TCP one (ss -tnp), or the
 * socket file a Unix one is connected to (BENCH_PG_SOCKET_DIR, BENCH_REDIS_SOCKET): ss -x lists the
 * path on the server's end, with our end's inode as its peer.
 */
function peerPorts(pid: number): Map<string, string> {
  const text = spawnSync('ss', ['-tnp'], { encoding: 'utf8' }).stdout ?? '';
  const map = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /\S+:(\d+)\s+users:\(\("[^"]*",pid=(\d+),fd=(\d+)\)/.exec(line);
    if (m && Number(m[2]) === pid) map.set(m[3]!, m[1]!);
  }
  const pathByPeerInode = new Map<string, string>();
  for (const line of (spawnSync('ss', ['-xn'], { encoding: 'utf8' }).stdout ?? '').split('\n')) {
    const m = /^u_str\s+\S+\s+\d+\s+\d+\s+(\/\S+)\s+\d+\s+\*\s+(\d+)/.exec(line);
    if (m) pathByPeerInode.set(m[2]!, m[1]!);
  }
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
      const path = inode ? pathByPeerInode.get(inode) : undefined;
      // Other Unix sockets (tsx's IPC pipe) stay unmapped: "other", as before.
      if (path?.includes('.s.PGSQL.')) map.set(fd, '5432');
      else if (path && path === process.env.BENCH_REDIS_SOCKET) map.set(fd, REDIS_PORT);
    } catch {
      // The fd closed between the listing and the read.
    }
  }
  return map;
}

const strace = process.env.BENCH_STRACE !== '0' && spawnSync('strace', ['-V']).status === 0;
const allSyscalls = strace && process.env.BENCH_STRACE === 'all';
const SOCKET_IO = /^(?:read|readv|recvfrom|recvmsg|write|writev|sendto|sendmsg)$/;

await gatewayVsDirect({
  seconds: 1,
  concurrency: 1,
  maxTokens: 64,
  probe: async (url, pid, admin) => {
    const chat = async (i: number) => {
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: QWEN_MODEL,
          messages: [{ role: 'user', content: `List three colours (${i}).` }],
          max_tokens: 64,
        }),
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`HTTP ${res.status} ${text.slice(0, 200)}`);
    };
    for (let i = 0; i < WARMUP; i++) await chat(i); // warm-up: JIT, pools, connections
    const ports = peerPorts(pid);
    const traceFile = join(tmpdir(), `gateway-io-${process.pid}.strace`);
    const tracer = strace
      ? spawn('strace', [
          '-f',
          '-p',
          String(pid),
          ...(allSyscalls ? ['-tt', '-T'] : ['-e', 'trace=write,writev,sendto,sendmsg']),
          '-o',
          traceFile,
        ])
      : undefined;
    if (tracer) await new Promise((r) => setTimeout(r, 1_000));
    const before = threadTicks(pid);
    const t0 = performance.now();
    for (let i = 0; i < N; i++) await chat(1_000 + i);
    const ms = (performance.now() - t0) / N;
    const after = threadTicks(pid);
    const perRequest = (ticks: number) => `${((ticks * TICK_US) / N).toFixed(0)} µs`;
    let mainUser = 0,
      mainSys = 0,
      helpers = 0;
    for (const [tid, t] of after) {
      const b = before.get(tid) ?? { user: 0, sys: 0 };
      if (Number(tid) === pid) [mainUser, mainSys] = [t.user - b.user, t.sys - b.sys];
      else helpers += t.user - b.user + t.sys - b.sys;
    }
    console.log(
      `gateway io, ${N} chat requests at c=1 (max_tokens 64, zero-latency model), ${ms.toFixed(2)} ms each${tracer ? ' (under strace)' : ''}`,
    );
    console.log(
      `  proxy CPU per request: main thread ${perRequest(mainUser + mainSys)} (user ${perRequest(mainUser)}, kernel ${perRequest(mainSys)}), other threads (GC, libuv) ${perRequest(helpers)}`,
    );
    if (!tracer) return;
    tracer.kill('SIGINT');
    await new Promise((r) => tracer.on('exit', r));
    const byPeer = new Map<string, number>();
    const bySyscall = new Map<string, number>();
    const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
    const peerOf = (fd: string) => {
      const port = ports.get(fd);
      return port === '5432'
        ? 'postgres'
        : port === REDIS_PORT
          ? 'redis'
          : port
            ? 'hosts/client'
            : `fd ${fd}`;
    };
    for (const line of readFileSync(traceFile, 'utf8').split('\n')) {
      // "<tid> name(fd, ..." or "<tid> <... name resumed>": a call is counted where it starts.
      const m = /^\d+\s+(?:[\d:.]+\s+)?(\w+)\((\d+)?/.exec(line);
      if (!m) continue;
      const [, name, fd] = m;
      if (allSyscalls) {
        count(bySyscall, name!);
        if (fd !== undefined && SOCKET_IO.test(name!)) count(byPeer, `${name} ${peerOf(fd)}`);
      } else if (fd !== undefined) {
        const peer = peerOf(fd);
        count(byPeer, peer.startsWith('fd ') ? 'other' : peer);
      }
    }
    if (process.env.BENCH_STRACE_KEEP) console.log(`  trace kept in ${traceFile}`);
    else rmSync(traceFile, { force: true });
    const perRequestList = (map: Map<string, number>) =>
      [...map]
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `${k} ${(v / N).toFixed(2)}`)
        .join(', ');
    if (allSyscalls) {
      const total = [...bySyscall.values()].reduce((a, b) => a + b, 0);
      console.log(`  syscalls per request: ${(total / N).toFixed(1)} (${perRequestList(bySyscall)})`);
      console.log(`  socket reads and writes per request: ${perRequestList(byPeer)}`);
    } else {
      console.log(`  socket writes per request: ${perRequestList(byPeer)}`);
    }
  },
});
process.exit(0);
