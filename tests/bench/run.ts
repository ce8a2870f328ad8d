// `pnpm bench`: every benchmark of the repository, gateway-side path against direct-to-upstream in
// the same run, reported as a throughput ratio and added milliseconds. Nothing here is asserted:
// speed is measured, never tested. Environment: BENCH_SECONDS (default 5), BENCH_CONCURRENCY (16).
import { spawnSync } from 'node:child_process';
import { REPO_ROOT } from '@gonka-gateway/deploy';
import { gatewayVsDirect } from './gateway-vs-direct.js';
import { sessionVsDirect } from './session-vs-direct.js';
import { signatureBench } from './signatures.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 16);
const out = (line = '') => process.stdout.write(`${line}\n`);

out(`gonka gateway benchmarks — ${new Date().toISOString()}, node ${process.version}, ${seconds} s per run`);
out('reproduce: pnpm bench   (BENCH_SECONDS, BENCH_CONCURRENCY to change the load)');
out();
for (const line of signatureBench()) out(line);
out();

for (const scenario of [
  { name: 'zero-latency model (protocol overhead dominates)', ttftMs: 0, perTokenMs: 0, maxTokens: 64 },
  { name: 'model with latency', ttftMs: 150, perTokenMs: 10, maxTokens: 64 },
]) {
  const { lines } = await sessionVsDirect({ ...scenario, concurrency, seconds });
  for (const line of lines) out(line);
  out();
}

{
  const { lines } = await gatewayVsDirect({ seconds, concurrency, maxTokens: 64 });
  for (const line of lines) out(line);
  out();
}

// The devnet's own speed (issue: mock model ≥ 5,000 req/s on one core; sub-ms tx execution).
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
