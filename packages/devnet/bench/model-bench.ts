// Mock-model throughput over HTTP (packages/devnet/README.md, "Benchmarks"): non-streaming
// completions at zero latency from the devnet's unsigned model endpoint. The devnet runs alone in a
// child process (one core); this process is the load generator, a plain keep-alive client with
// CONNECTIONS concurrent loops.
// Run: pnpm --filter @gonka-gateway/devnet bench:model   (env: CONNECTIONS, SECONDS)
import { fork } from 'node:child_process';
import { Agent, request } from 'node:http';

const CONNECTIONS = Number(process.env.CONNECTIONS ?? 32);
const SECONDS = Number(process.env.SECONDS ?? 10);

const child = fork(new URL('./serve-devnet.ts', import.meta.url), [], {
  execArgv: ['--import', 'tsx', '--conditions=source'],
});
const urls = await new Promise<{ mlNode: string }>((resolve) =>
  child.once('message', (m) => resolve((m as { urls: { mlNode: string } }).urls)),
);
const target = new URL(`${urls.mlNode}/v1/chat/completions`);
const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
const body = JSON.stringify({
  model: 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8',
  messages: [{ role: 'user', content: 'Say something about the devnet benchmark, please.' }],
  max_tokens: 32,
});

function once(): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      target,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function run(seconds: number) {
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < end) {
        const start = performance.now();
        const status = await once().catch(() => 0);
        if (status === 200) latencies.push(performance.now() - start);
        else errors++;
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.floor((latencies.length - 1) * p)]?.toFixed(2);
  return {
    rps: Math.round(latencies.length / seconds),
    p50: pct(0.5),
    p99: pct(0.99),
    errors,
    total: latencies.length,
  };
}

await run(2); // warm-up (JIT, sockets)
const result = await run(SECONDS);
process.stdout.write(
  `mock model, non-streaming, zero latency, ${CONNECTIONS} keep-alive connections, ${SECONDS} s:\n` +
    `  ${result.rps} req/s  (p50 ${result.p50} ms, p99 ${result.p99} ms, ${result.total} ok, ${result.errors} errors)\n`,
);
agent.destroy();
child.disconnect();
