// `pnpm bench:store`: the Postgres session store on real Postgres (a database of its own, dropped at
// the end). 1) append latency p50/p99 with 64 concurrent writers, each owning its own escrow (the
// write-ahead of every request, architecture §2.3); 2) acquire (= the load a new owner does) of a
// 1,000- and a 20,000-diff session, with every diff after nonce 0 and with a snapshot 500 nonces
// back (the target: a 20,000-nonce session reopens in under 2 s). Nothing is asserted.
// Environment: BENCH_SECONDS (default 5), BENCH_STORE_WRITERS (64), BENCH_STORE_POOL (20 connections).
// A single writer runs first, as the baseline the 64 are compared with.
import { cpus, loadavg } from 'node:os';
import { createTestDatabase } from '@gonka-gateway/shared/testing';
import postgres from 'postgres';
import { toBuffer, txsBlob } from '../src/store/diff-rows.js';
import { PostgresSessionStore } from '../src/store/postgres-session-store.js';
import { quantile, benchRecord as record, requestDiff } from './store-rows.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const writers = Number(process.env.BENCH_STORE_WRITERS ?? 64);
const poolSize = Number(process.env.BENCH_STORE_POOL ?? 20);
const out = (line = '') => process.stdout.write(`${line}\n`);

const ms = (v: number) => `${v.toFixed(2)} ms`;

const database = await createTestDatabase();
const sql = postgres(database.url, { max: poolSize, onnotice: () => {} });
const store = new PostgresSessionStore(sql);
try {
  out(
    `session store (Postgres) — pool ${poolSize}, ${seconds} s per run, ` +
      `load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} on ${cpus().length} cores`,
  );
  let next = 1_000_000;
  for (const n of [1, writers]) {
    const ids = Array.from({ length: n }, () => String(next++));
    const tokens = await Promise.all(
      ids.map(async (id) => {
        await store.create(record(id));
        return (await store.acquire(id)).fencingToken;
      }),
    );
    const latencies: number[] = [];
    const until = performance.now() + seconds * 1_000;
    await Promise.all(
      ids.map(async (id, i) => {
        for (let nonce = 1n; performance.now() < until; nonce++) {
          const diff = requestDiff(nonce);
          const t0 = performance.now();
          await store.appendDiff(id, diff, tokens[i]!);
          latencies.push(performance.now() - t0);
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    out(
      `  appendDiff, ${n === 1 ? '1 writer' : `${n} writers on separate escrows`}: ${latencies.length} appends, ` +
        `${Math.round(latencies.length / seconds)}/s; p50 ${ms(quantile(latencies, 0.5))}, ` +
        `p99 ${ms(quantile(latencies, 0.99))}, max ${ms(latencies.at(-1)!)}`,
    );
  }

  for (const size of [1_000, 20_000]) {
    const id = String(2_000_000 + size);
    await store.create(record(id));
    // Bulk-filled (not timed): the same rows appendDiff writes, in batches.
    for (let from = 1; from <= size; from += 1_000) {
      const rows = [];
      for (let n = from; n < from + 1_000 && n <= size; n++) {
        const d = requestDiff(BigInt(n));
        rows.push({
          escrow_id: id,
          nonce: String(n),
          txs: toBuffer(txsBlob(d)),
          user_sig: toBuffer(d.diff.userSig),
          post_state_root: toBuffer(d.diff.postStateRoot),
          root: toBuffer(d.root),
          warm_key_bindings: sql.json([]),
          fencing_token: '1',
        });
      }
      await sql`insert into session_diffs ${sql(rows)}`;
    }
    await sql`update session_heads set last_nonce = ${String(size)}::numeric where escrow_id = ${id}::numeric`;
    const timed = async (fn: () => Promise<unknown>) => {
      const runs: number[] = [];
      for (let r = 0; r < 3; r++) {
        const t0 = performance.now();
        await fn();
        runs.push(performance.now() - t0);
      }
      return runs.sort((a, b) => a - b)[1]!;
    };
    const full = await timed(() => store.acquire(id));
    const loadFull = await timed(() => store.load(id));
    const { fencingToken } = await store.acquire(id);
    const at = BigInt(size - 500);
    await store.saveSnapshot(
      id,
      { nonce: at, root: requestDiff(at).root, state: new Uint8Array(64 * 1024) },
      fencingToken,
    );
    const fromSnapshot = await timed(() => store.acquire(id));
    out(
      `  ${size.toLocaleString('en-US')}-diff session: acquire ${ms(full)} (load ${ms(loadFull)}) with every diff; ` +
        `acquire ${ms(fromSnapshot)} from a snapshot 500 back (64 KiB state)`,
    );
  }
} finally {
  await sql.end({ timeout: 5 });
  await database.drop();
}
