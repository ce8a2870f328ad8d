// `pnpm --filter @gonka-gateway/escrow-runtime exec tsx --conditions=source bench/group-commit.ts`:
// the store's group commit (src/store/group-commit.ts) on and off, on real Postgres (a database of
// its own, dropped at the end). A request is modelled as the session makes it (architecture §2.3,
// §4): under its escrow's compose lock the write-ahead (appendDiff with a StartInference diff and
// its payload), then, with the lock released, the post-answer write (saveWrites: a Confirm and a
// Finish queued, host progress), one after another per escrow. No host is called, so the numbers
// are the store's ceiling. C requests run at once, spread over E escrows. Nothing is asserted.
// The `pipelined` mode models the session as it composes now (devshard session/pipeline.ts): the
// compose lock covers composing only; each escrow's write-aheads go one at a time, every diff
// queued behind the one in flight in the next appendDiffs, which also carries the writes waiting in
// the session's buffer; the post-answer writes wait in that buffer and a save takes whatever is
// there (session-writes.ts), so requests that end together share one.
// Environment: BENCH_SECONDS (default 5), BENCH_CONCURRENCY (64), BENCH_STORE_POOL (20),
// BENCH_ESCROWS (comma list, default 1,8,64), BENCH_MODES (comma list of off,on,pipelined; all).
import { cpus, loadavg } from 'node:os';
import type { SessionWrites, StoredDiff } from '@gonka-gateway/devshard/session';
import { createTestDatabase } from '@gonka-gateway/shared/testing';
import postgres from 'postgres';
import { PostgresSessionStore } from '../src/store/postgres-session-store.js';
import { quantile, benchRecord as record, requestDiff } from './store-rows.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 64);
const poolSize = Number(process.env.BENCH_STORE_POOL ?? 20);
const escrowCounts = (process.env.BENCH_ESCROWS ?? '1,8,64').split(',').map(Number);
type Mode = 'off' | 'on' | 'pipelined';
const modes = (process.env.BENCH_MODES ?? 'off,on,pipelined').split(',') as Mode[];

/** One escrow as the pipelined session drives it: queued diffs, the write in flight, the buffer. */
interface Pipelined {
  queue: { diff: StoredDiff; resolve: () => void; reject: (e: unknown) => void }[];
  writing: boolean;
  buffer: { keys: string[]; host?: { address: string; nonce: bigint } };
  saved: Promise<void>;
}

const takeBuffer = (p: Pipelined): SessionWrites => {
  const { keys, host } = p.buffer;
  p.buffer = { keys: [] };
  return {
    addPending: keys.map((key) => ({ key, bytes: Uint8Array.of(1, 2, 3) })),
    ...(host ? { hostProgress: [host] } : {}),
  };
};

/** Write-aheads the pipelined mode sent (one per batch of diffs). */
let appendCalls = 0;

async function pump(store: PostgresSessionStore, id: string, token: bigint, p: Pipelined): Promise<void> {
  p.writing = true;
  try {
    while (p.queue.length > 0) {
      const batch = p.queue.splice(0, 64);
      const diffs = batch.map((b) => b.diff);
      const writes = takeBuffer(p);
      appendCalls++;
      try {
        if (diffs.length === 1) await store.appendDiff(id, diffs[0]!, token, writes);
        else await store.appendDiffs(id, diffs, token, writes);
        for (const b of batch) b.resolve();
      } catch (error) {
        for (const b of batch) b.reject(error);
      }
    }
  } finally {
    p.writing = false;
  }
}
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
    for (const mode of modes) {
      const groupCommit = mode !== 'off';
      const store = new PostgresSessionStore(sql, { groupCommit });
      const ids = Array.from({ length: escrows }, () => String(next++));
      const state = await Promise.all(
        ids.map(async (id) => {
          await store.create(record(id));
          const { fencingToken } = await store.acquire(id);
          const pipelined: Pipelined = {
            queue: [],
            writing: false,
            buffer: { keys: [] },
            saved: Promise.resolve(),
          };
          return {
            id,
            token: fencingToken,
            nonce: 0n,
            lock: Promise.resolve(),
            saved: Promise.resolve(),
            pipelined,
          };
        }),
      );
      const latencies: number[] = [];
      let requests = 0;
      const appendsBefore = appendCalls;
      const before = statements;
      const until = performance.now() + seconds * 1_000;
      await Promise.all(
        Array.from({ length: concurrency }, async (_, w) => {
          const s = state[w % escrows]!;
          while (performance.now() < until) {
            const t0 = performance.now();
            if (mode === 'pipelined') {
              // Composed on the tip at once; durable once its write (maybe shared) returned.
              const nonce = ++s.nonce;
              const p = s.pipelined;
              await new Promise<void>((resolve, reject) => {
                p.queue.push({ diff: requestDiff(nonce, true), resolve, reject });
                if (!p.writing) void pump(store, s.id, s.token, p);
              });
              latencies.push(performance.now() - t0);
              // The answer's Confirm and Finish wait in the buffer; one save takes what is there.
              const key = nonce.toString();
              p.buffer.keys.push(`confirm:${key}`, `finish:${key}`);
              p.buffer.host = { address: `gonka1host${nonce % 16n}`, nonce };
              p.saved = p.saved.then(async () => {
                if (p.buffer.keys.length === 0) return;
                await store.saveWrites(s.id, takeBuffer(p), s.token);
              });
              await p.saved;
              requests++;
              continue;
            }
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
      // Every diff of every escrow landed, in order, without a gap.
      for (const s of state) {
        const lastNonce = (await store.load(s.id))?.lastNonce;
        if (lastNonce !== s.nonce)
          throw new Error(`escrow ${s.id}: ${lastNonce} stored, ${s.nonce} composed`);
      }
      latencies.sort((a, b) => a - b);
      const perSecond = requests / seconds;
      out(
        `  ${String(escrows).padStart(2)} escrow(s), ${mode === 'pipelined' ? 'pipelined      ' : `group commit ${mode.padEnd(3)}`}: ` +
          `${Math.round(perSecond)} req/s (${Math.round(perSecond / escrows)} per escrow), ` +
          `write-ahead p50 ${quantile(latencies, 0.5).toFixed(2)} ms p99 ${quantile(latencies, 0.99).toFixed(2)} ms, ` +
          `${((statements - before) / Math.max(1, requests)).toFixed(2)} statements per request` +
          (mode === 'pipelined'
            ? `, ${(requests / Math.max(1, appendCalls - appendsBefore)).toFixed(1)} diffs per write-ahead`
            : ''),
      );
    }
  }
} finally {
  await sql.end({ timeout: 5 });
  await database.drop();
}
