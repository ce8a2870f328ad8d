// How much of the proxy's CPU per chat request is the floor of Node + HTTP on this machine and how
// much is the gateway's own (docs/performance.md): the same requests at c=1 through the real proxy
// and through forwarders that relay them to the same mock model with undici (floor-forwarder.ts: a
// bare Fastify app, node:http alone, and the protocol floor — the Fastify relay plus only the round
// trips and curve operations every chat request must make), each process's CPU read from /proc per
// thread. The proxy's request also crosses a devnet host (the protocol), which the forwarders skip:
// proxy minus protocol floor is what the gateway's own code adds; the protocol floor is what no
// implementation on this stack and machine can go below.
// Run: `pnpm bench:floor` (BENCH_REQUESTS per round, default 500; BENCH_ROUNDS, default 3, the
// targets interleaved in each; BENCH_WARMUP requests to each first, default 2,000). It ends with
// proxy ÷ protocol floor per round, the figure a change to the gateway's code moves.
import type { TsProcess } from '@gonka-gateway/deploy';
import { QWEN_MODEL } from '@gonka-gateway/devnet';
import { createTestDatabase, createTestRedis } from '@gonka-gateway/shared/testing';
import { type FloorMode, startForwarder } from './floor-process.js';
import { gatewayVsDirect } from './gateway-vs-direct.js';
import { TICK_US, threadTicks } from './proc-stats.js';

const N = Number(process.env.BENCH_REQUESTS ?? 500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2_000);

interface Target {
  readonly name: string;
  readonly url: string;
  readonly pid: number;
  readonly headers: Record<string, string>;
  readonly rounds: { main: number; others: number; ms: number }[];
}

async function chat(target: Target, i: number): Promise<void> {
  const res = await fetch(`${target.url}/v1/chat/completions`, {
    method: 'POST',
    headers: target.headers,
    body: JSON.stringify({
      model: QWEN_MODEL,
      messages: [{ role: 'user', content: `List three colours (${i}).` }],
      max_tokens: 64,
    }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${target.name}: HTTP ${res.status} ${text.slice(0, 200)}`);
}

/** µs of CPU per request on the main thread and on every other thread of the target, and ms each. */
async function measure(target: Target, from: number): Promise<void> {
  const before = threadTicks(target.pid);
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await chat(target, from + i);
  const ms = (performance.now() - t0) / N;
  let main = 0;
  let others = 0;
  for (const [tid, t] of threadTicks(target.pid)) {
    const b = before.get(tid) ?? { user: 0, sys: 0 };
    const ticks = t.user - b.user + t.sys - b.sys;
    if (Number(tid) === target.pid) main += ticks;
    else others += ticks;
  }
  target.rounds.push({ main: (main * TICK_US) / N, others: (others * TICK_US) / N, ms });
}

const range = (values: number[], digits = 0) =>
  `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;

await gatewayVsDirect({
  seconds: 1,
  concurrency: 1,
  maxTokens: 64,
  probe: async (url, pid, admin, devnet) => {
    const forwarders: TsProcess[] = [];
    const [db, redis] = await Promise.all([createTestDatabase({ migrate: false }), createTestRedis()]);
    const services = {
      FLOOR_DATABASE_URL: db.url,
      FLOOR_REDIS_URL: redis.url,
      FLOOR_REDIS_PREFIX: redis.prefix,
    };
    try {
      const json = { 'content-type': 'application/json' };
      const targets: Target[] = [
        { name: 'proxy', url, pid, headers: { ...json, authorization: `Bearer ${admin}` }, rounds: [] },
      ];
      const names: Record<FloorMode, string> = {
        protocol: 'protocol floor',
        fastify: 'bare Fastify + undici',
        http: 'node:http + undici',
      };
      for (const mode of ['protocol', 'fastify', 'http'] as const) {
        const [child, port] = await startForwarder(mode, devnet.mlNode, services);
        forwarders.push(child);
        const name = names[mode];
        targets.push({
          name,
          url: `http://127.0.0.1:${port}`,
          pid: child.child.pid!,
          headers: json,
          rounds: [],
        });
      }
      for (const target of targets) for (let i = 0; i < WARMUP; i++) await chat(target, i);
      for (let round = 0; round < ROUNDS; round++) {
        for (const target of targets) await measure(target, 10_000 * (round + 1));
      }
      console.log(
        `CPU per chat request at c=1, ${ROUNDS} interleaved rounds of ${N} after ${WARMUP} (max_tokens 64, zero-latency model)`,
      );
      for (const t of targets) {
        const total = t.rounds.map((r) => r.main + r.others);
        console.log(
          `  ${t.name.padEnd(22)} main thread ${range(t.rounds.map((r) => r.main))} µs, other threads ${range(t.rounds.map((r) => r.others))} µs, ` +
            `whole process ${range(total)} µs, ${range(
              t.rounds.map((r) => r.ms),
              2,
            )} ms each`,
        );
      }
      // The same round's two figures, so a slower or busier moment moves both: the gateway's own
      // share is what a change to its code can still cut.
      const [proxy, floor] = targets as [Target, Target];
      const whole = (t: Target, round: number) => t.rounds[round]!.main + t.rounds[round]!.others;
      const rounds = proxy.rounds.map((_, round) => round);
      console.log(
        `  proxy / protocol floor  ${range(
          rounds.map((r) => whole(proxy, r) / whole(floor, r)),
          2,
        )}× the whole process, +${range(rounds.map((r) => whole(proxy, r) - whole(floor, r)))} µs per request`,
      );
    } finally {
      await Promise.all(forwarders.map((f) => f.stop()));
      await Promise.all([db.drop(), redis.cleanup()]);
    }
  },
});
process.exit(0);
