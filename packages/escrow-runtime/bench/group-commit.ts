// `pnpm --filter @gonka-gateway/escrow-runtime exec tsx --conditions=source bench/group-commit.ts`:
// the store's group commit (src/store/group-commit.ts) on and off, on real Postgres (a database of
// its own, dropped at the end). A request is modelled as the session makes it (architecture §2.3,
// §4): under its escrow's compose lock the write-ahead (appendDiff with a StartInference diff and
// its payload), then, with the lock released, the post-answer write (saveWrites: a Confirm and a
// Finish queued, host progress), one after another per escrow. No host is called, so the numbers
// are the store's ceiling. C requests run at once, spread over E escrows. Nothing is asserted.
// Environment: BENCH_SECONDS (default 5), BENCH_CONCURRENCY (64), BENCH_STORE_POOL (20),
// BENCH_ESCROWS (comma list, default 1,8,64).
import { cpus, loadavg } from 'node:os';
import { createTestDatabase } from '@gonka-gateway/shared/testing';
import postgres from 'postgres';
import { PostgresSessionStore } from '../src/store/postgres-session-store.js';
import { quantile, benchRecord as record, requestDiff } from './store-rows.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 64);
const poolSize = Number(process.env.BENCH_STORE_POOL ?? 20);
const escrowCounts = (process.env.BENCH_ESCROWS ?? '1,8,64').split(',').map(Number);
const out = (line = '') => process.stdout.write(`${line}\n`);

const database = await createTestDatabase();
let statements = 0;
const sql = postgres(database.url, {
  max: poolSize,
  onnotice: () => {},
  debug: () => {
    statements++;
  },
});
try {
  out(
    `group commit — pool ${poolSize}, ${concurrency} requests at once, ${seconds} s per run, load average ` +
      `${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} on ${cpus().length} cores`,
  );
  let next = 3_000_000;
  for (const escrows of escrowCounts) {
    for (const groupCommit of [false, true]) {
      const store = new PostgresSessionStore(sql, { groupCommit });
      const ids = Array.from({ length: escrows }, () => String(next++));
      const state = await Promise.all(
        ids.map(async (id) => {
          await store.create(record(id));
          const { fencingToken } = await store.acquire(id);
          return { id, token: fencingToken, nonce: 0n, lock: Promise.resolve(), saved: Promise.resolve() };
        }),
      );
      const latencies: number[] = [];
      let requests = 0;
      const before = statements;
      const until = performance.now() + seconds * 1_000;
      await Promise.all(
        Array.from({ length: concurrency }, async (_, w) => {
          const s = state[w % escrows]!;
          while (performance.now() < until) {
            const t0 = performance.now();
            // The compose lock: one write-ahead at a time per escrow, the next nonce after it.
            let release!: () => void;
            const previous = s.lock;
            s.lock = new Promise<void>((resolve) => {
              release = resolve;
            });
            await previous;
            const nonce = ++s.nonce;
            try {
              await store.appendDiff(s.id, requestDiff(nonce, true), s.token);
            } finally {
              release();
            }
            latencies.push(performance.now() - t0);
            // The post-answer write, after the previous one of the escrow (session-writes.ts).
            const key = nonce.toString();
            s.saved = s.saved.then(() =>
              store.saveWrites(
                s.id,
                {
                  addPending: [
                    { key: `confirm:${key}`, bytes: Uint8Array.of(1, 2, 3) },
                    { key: `finish:${key}`, bytes: Uint8Array.of(4, 5, 6) },
                  ],
                  hostProgress: [{ address: `gonka1host${nonce % 16n}`, nonce }],
                },
                s.token,
              ),
            );
            await s.saved;
            requests++;
          }
        }),
      );
      latencies.sort((a, b) => a - b);
      const perSecond = requests / seconds;
      out(
        `  ${String(escrows).padStart(2)} escrow(s), group commit ${groupCommit ? 'on ' : 'off'}: ` +
          `${Math.round(perSecond)} req/s (${Math.round(perSecond / escrows)} per escrow), ` +
          `write-ahead p50 ${quantile(latencies, 0.5).toFixed(2)} ms p99 ${quantile(latencies, 0.99).toFixed(2)} ms, ` +
          `${((statements - before) / Math.max(1, requests)).toFixed(2)} statements per request`,
      );
    }
  }
} finally {
  await sql.end({ timeout: 5 });
  await database.drop();
}
