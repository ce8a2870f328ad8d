// `pnpm bench`: every benchmark of the repository, gateway-side path against direct-to-upstream in
// the same run, reported as a throughput ratio and added milliseconds. Nothing here is asserted:
// speed is measured, never tested. Environment: BENCH_SECONDS (default 5), BENCH_CONCURRENCY (a
// comma list, default 1,64), BENCH_SESSION_NONCES (session cost by nonce, default 100,1000,5000;
// each a separate process driven to that nonce first), BENCH_STATE_NONCES (100,1000,5000,19800),
// BENCH_FETCH=1 (host calls through fetch instead of undici.request); concurrent streams per proxy
// replica: BENCH_STREAMS (default 16,64,256,512; empty skips), BENCH_STREAM_TTFT_MS,
// BENCH_STREAM_PER_TOKEN_MS, BENCH_STREAM_TOKENS, BENCH_STREAM_ESCROWS (gateway-streams.ts); the
// serve stage under devshard host faults: BENCH_FAULT_MODES (default every mode; empty skips),
// BENCH_FAULT_REQUESTS (serving-faults.ts); the gateway under load by concurrency and escrows:
// BENCH_ESCROWS (default 1,8; empty skips), BENCH_REPLICAS (1), its concurrencies BENCH_CONCURRENCY
// when set, else 1,16,64 (gateway-load.ts).
import { spawnSync } from 'node:child_process';
import { REPO_ROOT } from '@gonka-gateway/deploy';
import { gatewayLoad, loadOptionsFromEnv } from './gateway-load.js';
import { gatewayStreams, streamsOptionsFromEnv } from './gateway-streams.js';
import { gatewayVsDirect } from './gateway-vs-direct.js';
import { faultOptionsFromEnv, servingFaults } from './serving-faults.js';
import { sessionVsDirect } from './session-vs-direct.js';
import { signatureBench } from './signatures.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const concurrencies = (process.env.BENCH_CONCURRENCY ?? '1,64').split(',').map(Number);
const nonces = (v: string | undefined, d: string) => (v ?? d).split(',').filter(Boolean).map(Number);
const out = (line = '') => process.stdout.write(`${line}\n`);
// Read first, so an unknown fault mode stops the run before the other parts.
const faults = faultOptionsFromEnv();

out(`gonka gateway benchmarks — ${new Date().toISOString()}, node ${process.version}, ${seconds} s per run`);
out(
  'reproduce: pnpm bench   (BENCH_SECONDS, BENCH_CONCURRENCY, BENCH_SESSION_NONCES, BENCH_STATE_NONCES, BENCH_ESCROWS, BENCH_REPLICAS, BENCH_STREAMS, BENCH_FAULT_MODES)',
);
out();
for (const line of signatureBench()) out(line);
out();

// The state layer and the session by nonce: cost per request must not grow with it.
// Separate processes (packages/devshard/bench), so each run starts with a fresh heap.
const devshardBench = (script: string, args: string[]) => {
  const r = spawnSync(
    process.execPath,
    ['--expose-gc', '--conditions=source', '--import', 'tsx', `packages/devshard/bench/${script}`, ...args],
    { cwd: REPO_ROOT, encoding: 'utf8' },
  );
  return (r.stdout || r.stderr).trimEnd();
};
const stateNonces = nonces(process.env.BENCH_STATE_NONCES, '100,1000,5000,19800');
if (stateNonces.length > 0) out(devshardBench('state-cost.ts', stateNonces.map(String)));
for (const nonce of stateNonces.filter((n) => n === 1_000 || n === 19_800)) {
  out(devshardBench('state-cost.ts', ['--rss', String(nonce)]));
}
out();
out('user session over in-process hosts, per request (session CPU = infer() minus the hosts’ chat calls)');
for (const sealing of [false, true]) {
  for (const nonce of nonces(process.env.BENCH_SESSION_NONCES, '100,1000,5000')) {
    const args = [String(nonce), '200', ...(sealing ? ['--sealing'] : [])];
    out(devshardBench('session-cost.ts', args).split('\n').pop() ?? '');
  }
}
out();

for (const concurrency of concurrencies) {
  for (const scenario of [
    { name: 'zero-latency model (protocol overhead dominates)', ttftMs: 0, perTokenMs: 0, maxTokens: 64 },
    { name: 'model with latency', ttftMs: 150, perTokenMs: 10, maxTokens: 64 },
  ]) {
    const { lines } = await sessionVsDirect({ ...scenario, concurrency, seconds });
    for (const line of lines) out(line);
    out();
  }
}

// The whole gateway (proxy process, admission, session, SSE) against the mock model directly.
for (const concurrency of concurrencies) {
  const { lines } = await gatewayVsDirect({ seconds, concurrency, maxTokens: 64 });
  for (const line of lines) out(line);
  out();
}

// The gateway under load: throughput, CPU and latency by concurrency and by escrows owned.
const load = loadOptionsFromEnv();
if (load.escrows.length > 0) {
  for (const line of await gatewayLoad(load)) out(line);
  out();
}

// Concurrent SSE streams through one proxy replica, with a model of realistic latency.
const streams = streamsOptionsFromEnv();
if (streams.levels.length > 0) {
  for (const line of await gatewayStreams(streams)) out(line);
  out();
}

// The devnet's own speed (targets: mock model ≥ 5,000 req/s on one core; sub-ms tx execution).
for (const script of ['bench:model', 'bench:tx']) {
  const r = spawnSync('pnpm', ['--silent', '--filter', '@gonka-gateway/devnet', script], {
    cwd: REPO_ROOT,
    env: { ...process.env, SECONDS: String(seconds) },
    encoding: 'utf8',
  });
  out((r.stdout || r.stderr).trimEnd());
  out();
}

// The Postgres session store: append latency under 64 writers, reopen of 1,000 / 20,000-diff sessions.
{
  const r = spawnSync('pnpm', ['--silent', '--filter', '@gonka-gateway/escrow-runtime', 'bench:store'], {
    cwd: REPO_ROOT,
    env: { ...process.env, BENCH_SECONDS: String(seconds) },
    encoding: 'utf8',
  });
  out((r.stdout || r.stderr).trimEnd());
  out();
}

// The serve stage on a flaky network: one participant of the escrow's group faulty, per fault mode.
if (faults.modes.length > 0) {
  for (const line of await servingFaults(faults)) out(line);
  out();
}
