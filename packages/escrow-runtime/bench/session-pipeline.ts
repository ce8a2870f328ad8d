// `pnpm --filter @gonka-gateway/escrow-runtime exec tsx --conditions=source bench/session-pipeline.ts`:
// one real UserSession (devshard) on one escrow, on the Postgres store (a database of its own,
// dropped at the end), with in-process hosts (devshard testing: no network, no model), driven by C
// closed-loop requests. It measures what pipelined composition (devshard session/pipeline.ts) gives
// one escrow: the next nonce is composed while the previous write-ahead is in flight, and the diffs
// queued behind it share the next appendDiffs. `one diff per write` hides appendDiffs from the
// session (composition still pipelined, one diff per round trip). The in-process hosts run in this
// process, so the figures are bounded by this CPU too. Nothing is asserted.
// Environment: BENCH_SECONDS (default 5), BENCH_CONCURRENCY (comma list, default 16,64),
// BENCH_STORE_POOL (20).
import { cpus, loadavg } from 'node:os';
import type { SessionStore } from '@gonka-gateway/devshard/session';
import { request, setup, wrapStore } from '@gonka-gateway/devshard/testing';
import { createTestDatabase } from '@gonka-gateway/shared/testing';
import postgres from 'postgres';
import { PostgresSessionStore } from '../src/store/postgres-session-store.js';
import { quantile } from './store-rows.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const concurrencies = (process.env.BENCH_CONCURRENCY ?? '16,64').split(',').map(Number);
const poolSize = Number(process.env.BENCH_STORE_POOL ?? 20);
const out = (line = '') => process.stdout.write(`${line}\n`);

out(
  `session pipeline — 1 escrow, pool ${poolSize}, ${seconds} s per run, load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} on ${cpus().length} cores`,
);
for (const batched of [true, false]) {
  for (const concurrency of concurrencies) {
    // A database per run: the in-process hosts serve the setup's one escrow id.
    const database = await createTestDatabase();
    const sql = postgres(database.url, { max: poolSize, onnotice: () => {} });
    try {
      const t = setup({ keepHistory: 2_000, shareApplied: true, amount: 10n ** 15n, maxNonce: 10n ** 9n });
      const pg = new PostgresSessionStore(sql);
      const escrowId = t.record.escrowId;
      let writes = 0;
      let diffs = 0;
      const counted: SessionStore = wrapStore(pg, {
        appendDiff: (id, d, token, w) => {
          writes++;
          diffs++;
          return pg.appendDiff(id, d, token, w);
        },
        ...(batched
          ? {
              appendDiffs: (id, ds, token, w) => {
                writes++;
                diffs += ds.length;
                return pg.appendDiffs(id, ds, token, w);
              },
            }
          : {}),
      });
      await pg.create(t.record);
      const session = await t.open({ store: counted, snapshotEvery: 0 });
      const latencies: number[] = [];
      let requests = 0;
      let failures = 0;
      const until = performance.now() + seconds * 1_000;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (performance.now() < until) {
            const t0 = performance.now();
            try {
              await session.infer(request(64n));
              requests++;
              latencies.push(performance.now() - t0);
            } catch {
              failures++;
            }
          }
        }),
      );
      await session.drain();
      const stored = (await pg.load(escrowId))?.lastNonce;
      latencies.sort((a, b) => a - b);
      out(
        `  ${batched ? 'appendDiffs        ' : 'one diff per write '} c=${String(concurrency).padStart(3)}: ` +
          `${Math.round(requests / seconds)} req/s, p50 ${quantile(latencies, 0.5).toFixed(1)} ms ` +
          `p99 ${quantile(latencies, 0.99).toFixed(1)} ms, ${(diffs / Math.max(1, writes)).toFixed(1)} diffs ` +
          `per write-ahead, ${failures} failed, ${stored} diffs stored (${session.latestNonce} adopted)`,
      );
    } finally {
      await sql.end({ timeout: 5 });
      await database.drop();
    }
  }
}
