// The serve stage on a flaky network (apps/proxy README "Deadlines, hedged attempts and host
// health"): one devnet, one escrow, the proxy as its own process with the default serving settings
// (deadlines, hedge budget, quarantine), and per run one devshard host fault put on ONE participant
// of the escrow's group holding fewer than a third of its slots (so the session's dominant-host rule
// stays out of it). Every mode gets a fresh proxy process on a fresh Redis key prefix, so host
// health, learned deadlines and the hedge budget start clean; the escrow and its session carry over.
// Per mode, BENCH_FAULT_REQUESTS consecutive chat requests (streamed and non-streamed in turn) through
// the official openai client: answers with content, client-side latency, extra nonces (nonces the
// escrow consumed up to the last answer minus requests served: burned nonces, hedges), the proxy's
// avoided-nonce and hedge counters, and what the hosts were billed against what was served: the cost
// of the inferences the mode started, replayed from the write-ahead log after the idle flush has
// carried the last Finishes, over Σ(prompt + completion tokens) × token_price of the served answers;
// beside it the same from the session balance (its drop minus fee_per_nonce per nonce), which also
// moves when an earlier mode's inference resolves. An abandoned attempt whose inference is still
// Pending/Started counts at its reservation (its Finish or timeout may refund part of it later).
// Nothing is asserted. Run: `pnpm bench:faults`; environment BENCH_FAULT_MODES (comma list, default
// every mode below; the no-fault baseline runs first whenever one is given; empty runs nothing),
// BENCH_FAULT_REQUESTS (default 32).
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { createChainClient, PrivateKey } from '@gonka-gateway/chain';
import { startTsProcess } from '@gonka-gateway/deploy';
import { QWEN_MODEL } from '@gonka-gateway/devnet';
import {
  applyDiff,
  type InferenceRecord,
  InferenceStatus,
  resolveSessionConfig,
  type SessionState,
  sessionFromEscrow,
  warmKeyLookupFromBindings,
} from '@gonka-gateway/devshard';
import { recordCost, type SessionRecord } from '@gonka-gateway/devshard/session';
import { PostgresSessionStore } from '@gonka-gateway/escrow-runtime';
import { insertEscrowRows } from '@gonka-gateway/escrow-runtime/testing';
import { bootstrapSettings, loadConfig, redisKeys } from '@gonka-gateway/shared';
import { createTestDatabase, createTestRedis, type TestRedis } from '@gonka-gateway/shared/testing';
import OpenAI from 'openai';
import postgres from 'postgres';
import { freePort } from '../support/gateway-process.js';
import { benchRuntime } from './bench-runtime.js';
import { openBenchEscrow, startDevnetChild } from './devnet-child.js';

const ADMIN = `sk-admin-${randomBytes(24).toString('hex')}`;
/** The mock model's latency: a realistic token rate, so a hedge visibly costs time. */
const MODEL_TTFT_MS = 150;
const MODEL_PER_TOKEN_MS = 10;
const MAX_TOKENS = 64;
const CLIENT_TIMEOUT_MS = 60_000;
/** A request slower than this, a failed one, or billed ÷ served above BILLED_LIMIT is listed in detail. */
const SLOW_MS = 10_000;
const BILLED_LIMIT = 1.25;
/** The session's disconnect tail (30 s) and some slack. */
const SETTLE_WAIT_MS = 40_000;
/** The idle flush comes GATEWAY_FLUSH_IDLE_MS (default 10 s) after the last request. */
const FLUSH_WAIT_MS = 20_000;

/** Each mode's fault, as POST /devnet/admin/faults takes it (packages/devnet/src/host/faults.ts). */
const FAULTS: Record<string, Record<string, unknown>> = {
  'stall-after-receipt': { mode: 'stall-after-receipt' },
  'cut-stream': { mode: 'cut-stream', cutAfterFrames: 2 },
  'rate-limit': { mode: 'rate-limit' },
  unavailable: { mode: 'unavailable' },
  error: { mode: 'error', status: 500 },
  down: { mode: 'down' },
  slow: { mode: 'slow', firstTokenMs: 20_000, perTokenMs: MODEL_PER_TOKEN_MS },
  'empty-after-receipt': { mode: 'empty-after-receipt' },
  'error-event': { mode: 'error-event', status: 500 },
  'hang-before-headers': { mode: 'hang-before-headers' },
};
export const FAULT_MODES = Object.keys(FAULTS);
const BASELINE = 'none';

export interface FaultBenchOptions {
  /** Fault modes after the baseline; empty = nothing runs. */
  modes: string[];
  requests: number;
}

export function faultOptionsFromEnv(env = process.env): FaultBenchOptions {
  const modes = (env.BENCH_FAULT_MODES ?? FAULT_MODES.join(','))
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean);
  for (const m of modes) {
    if (m !== BASELINE && !(m in FAULTS)) {
      throw new Error(`BENCH_FAULT_MODES: unknown mode ${m} (known: ${BASELINE}, ${FAULT_MODES.join(', ')})`);
    }
  }
  return { modes, requests: Number(env.BENCH_FAULT_REQUESTS ?? 32) };
}

/** One request as the client saw it. */
interface ClientRun {
  index: number;
  stream: boolean;
  ms: number;
  /** Non-empty content and no error. */
  served: boolean;
  error?: string;
  requestId?: string;
  usage?: { prompt: number; completion: number };
}

interface UsageEntry {
  status: string;
  totalMs: string;
  attempts: Attempt[];
}

/** The fields of chat/usage-events.ts AttemptRecord this bench prints. */
interface Attempt {
  nonce: string;
  participant: string;
  hedge: boolean;
  started_ms: number;
  receipt_ms?: number;
  first_token_ms?: number;
  ended_ms?: number;
  deadlines_hit: string[];
  outcome: string;
  error?: string;
  cost?: string;
  cost_final?: boolean;
  burned_nonces?: string[];
}

interface ModeResult {
  mode: string;
  runs: ClientRun[];
  nonces: bigint;
  balanceDrop: bigint;
  avoided: number;
  hedges: number;
  hedgesRefused: number;
  /** Nonces consumed up to the last answer, and up to the idle flush after it (charged a fee each). */
  feeNonces: bigint;
  flushed: boolean;
  /** No inference was in flight any more when the balance was read. */
  settled: boolean;
  usage: Map<string, UsageEntry>;
  /** ngonka charged to this mode's inferences (Ledger), and how many of them hold a reservation still. */
  charged: bigint;
  unresolved: number;
  /** Nonces up to the last answer that started no inference and no attempt burned, by what they carried. */
  others: Map<string, number>;
  /** Attempts that ran an inference on a nonce and did not serve. */
  abandoned: number;
}

interface StatusBody {
  runtimes?: { escrow_id: string; status: string; in_flight: number; nonce: string | null }[];
  devshards?: { escrow_id: string; nonce: string; balance_estimate: string }[];
}

async function status(url: string, escrowId: string) {
  const body = (await (await fetch(`${url}/v1/status`)).json()) as StatusBody;
  const runtime = body.runtimes?.find((r) => r.escrow_id === escrowId);
  const devshard = body.devshards?.find((d) => d.escrow_id === escrowId);
  return {
    serving: runtime?.status === 'serving',
    inFlight: runtime?.in_flight ?? 0,
    nonce: BigInt(runtime?.nonce ?? devshard?.nonce ?? 0),
    balance: BigInt(devshard?.balance_estimate ?? 0),
  };
}

/** The sum of a counter over its labels, from /metrics (0 when absent). */
async function counter(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)$`, 'gm')))
    sum += Number(m[1]);
  return sum;
}

/** The usage records the proxy appended to its Redis stream, by request id. */
async function usageEntries(redis: TestRedis): Promise<Map<string, UsageEntry>> {
  const entries = await redis.redis.xrange(redisKeys(redis.prefix).usageStream, '-', '+');
  const out = new Map<string, UsageEntry>();
  for (const [, fields] of entries) {
    const f = new Map<string, string>();
    for (let i = 0; i + 1 < fields.length; i += 2) f.set(fields[i]!, fields[i + 1]!);
    let attempts: Attempt[] = [];
    try {
      attempts = JSON.parse(f.get('attempts') ?? '[]') as Attempt[];
    } catch {}
    out.set(f.get('request_id') ?? '', {
      status: f.get('status') ?? '',
      totalMs: f.get('total_ms') ?? '',
      attempts,
    });
  }
  return out;
}

async function oneRequest(client: OpenAI, index: number, stream: boolean): Promise<ClientRun> {
  const messages = [{ role: 'user' as const, content: `List three colours (${index}).` }];
  const t0 = performance.now();
  const run: ClientRun = { index, stream, ms: 0, served: false };
  let content = '';
  try {
    if (stream) {
      const { data, response } = await client.chat.completions
        .create({
          model: QWEN_MODEL,
          messages,
          max_tokens: MAX_TOKENS,
          stream: true,
          stream_options: { include_usage: true },
        })
        .withResponse();
      run.requestId = response.headers.get('x-request-id') ?? undefined;
      for await (const chunk of data) {
        content += chunk.choices[0]?.delta?.content ?? '';
        if (chunk.usage) {
          run.usage = { prompt: chunk.usage.prompt_tokens, completion: chunk.usage.completion_tokens };
        }
      }
    } else {
      const { data, response } = await client.chat.completions
        .create({ model: QWEN_MODEL, messages, max_tokens: MAX_TOKENS })
        .withResponse();
      run.requestId = response.headers.get('x-request-id') ?? undefined;
      content = data.choices[0]?.message?.content ?? '';
      if (data.usage) {
        run.usage = { prompt: data.usage.prompt_tokens, completion: data.usage.completion_tokens };
      }
    }
    run.served = content.length > 0;
    if (!run.served) run.error = 'empty content';
  } catch (error) {
    const e = error as { status?: number; message?: string; headers?: Headers };
    run.requestId ??= e.headers?.get?.('x-request-id') ?? undefined;
    run.error = `${e.status !== undefined ? `HTTP ${e.status}: ` : ''}${e.message ?? String(error)}`.slice(
      0,
      200,
    );
    if (content.length > 0) run.error = `after ${content.length} chars of content: ${run.error}`;
  }
  run.ms = performance.now() - t0;
  return run;
}

/**
 * The escrow's state replayed from the proxy's write-ahead log (session_diffs), as the hosts apply it:
 * what each inference costs (the Finish's charge, or its reservation while Pending/Started), so each
 * mode is charged for its own nonces whatever earlier modes resolve meanwhile. Sealed records are
 * kept as they left the live map.
 */
class Ledger {
  #state: SessionState;
  readonly #sealed = new Map<bigint, InferenceRecord>();
  /** What each nonce without a StartInference carried: `empty` (burned fee-only) or its tx kinds. */
  readonly #other = new Map<bigint, string>();
  readonly #store: PostgresSessionStore;

  constructor(
    private readonly record: SessionRecord,
    sql: postgres.Sql,
  ) {
    this.#store = new PostgresSessionStore(sql);
    this.#state = sessionFromEscrow(record.escrow, {
      tag: record.tag,
      chainParams: record.chainParams,
    }).state;
  }

  /** Applies the diffs stored since the last call, up to `last`. */
  async advance(last: bigint): Promise<void> {
    if (last <= this.#state.latestNonce) return;
    const diffs = await this.#store.readDiffs(this.record.escrowId, this.#state.latestNonce + 1n, last);
    for (const d of diffs) {
      const { state, effects } = applyDiff(this.#state, d.diff, {
        replay: true,
        isWarmKey: warmKeyLookupFromBindings(d.warmKeysBound),
      });
      for (const sealed of effects.sealed) this.#sealed.set(sealed.id, sealed.record);
      const kinds = [...new Set(d.diff.txs.map((t) => t.tx.kind))].sort();
      // A burned nonce carries the host txs that were waiting, as any diff does.
      if (!kinds.includes('startInference')) this.#other.set(d.nonce, kinds.join('+') || 'empty');
      this.#state = state;
    }
  }

  /** ngonka charged to inferences started at nonces in (from, to], and how many still hold a reservation. */
  charged(from: bigint, to: bigint): { cost: bigint; unresolved: number } {
    let cost = 0n;
    let unresolved = 0;
    for (let n = from + 1n; n <= to; n++) {
      const r = this.#state.inferences.get(n) ?? this.#sealed.get(n);
      if (!r) continue;
      cost += recordCost(r).cost;
      if (r.status === InferenceStatus.Pending || r.status === InferenceStatus.Started) unresolved++;
    }
    return { cost, unresolved };
  }

  /** Nonces in (from, to] that started no inference, except `skip`, counted by what they carried. */
  others(from: bigint, to: bigint, skip: ReadonlySet<string>): Map<string, number> {
    const out = new Map<string, number>();
    for (let n = from + 1n; n <= to; n++) {
      const kind = this.#other.get(n);
      if (kind !== undefined && !skip.has(n.toString())) out.set(kind, (out.get(kind) ?? 0) + 1);
    }
    return out;
  }
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * p) - 1)] ?? Number.NaN;

export async function servingFaults(options: FaultBenchOptions): Promise<string[]> {
  if (options.modes.length === 0) return [];
  const modes = [BASELINE, ...options.modes.filter((m) => m !== BASELINE)];
  const creator = PrivateKey.random();
  const devnet = await startDevnetChild({
    BLOCK_INTERVAL_MS: '100',
    MODEL_TTFT_MS: String(MODEL_TTFT_MS),
    MODEL_PER_TOKEN_MS: String(MODEL_PER_TOKEN_MS),
    DEVSHARD_PRIVATE_KEY: creator.exportHex(),
  });
  const db = await createTestDatabase();
  const storeSql = postgres(db.url, { max: 2, onnotice: () => {} });
  let proxy: ReturnType<typeof startTsProcess> | undefined;
  let redis: TestRedis | undefined;
  const setFaults = async (devshardHosts: Record<string, unknown> | null) => {
    const res = await fetch(`${devnet.urls.node}/devnet/admin/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ devshardHosts }),
    });
    if (res.status !== 200) throw new Error(`devnet faults: HTTP ${res.status} ${await res.text()}`);
    // The `down` fault stops or starts the host's server a moment after the switch.
    await new Promise((r) => setTimeout(r, 500));
  };
  try {
    const chain = createChainClient({ chainRest: devnet.urls.chainRest, publicApi: devnet.urls.node });
    const { escrowId, row, version, record } = await openBenchEscrow(chain, creator);
    await new PostgresSessionStore(storeSql).create(record);
    await insertEscrowRows(db.sql, [
      {
        escrowId,
        modelId: QWEN_MODEL,
        creator: row.creator,
        amount: row.amount,
        epochIndex: row.epochIndex,
        version,
      },
    ]);
    const slots = record.escrow.slots;
    const { config } = resolveSessionConfig(slots.length, record.escrow);
    const slotCount = new Map<string, number>();
    for (const s of slots) slotCount.set(s, (slotCount.get(s) ?? 0) + 1);
    // The participant with the most slots under a third of them: the fault is met most often while
    // the session's dominant-host rule (a third of the slots or more) stays out of it.
    const candidates = [...slotCount].filter(([, n]) => n * 3 < slots.length).sort((a, b) => b[1] - a[1]);
    if (candidates.length === 0) {
      throw new Error(
        `no participant holds under a third of the ${slots.length} slots: ${[...slotCount.values()]}`,
      );
    }
    const [faulty, faultySlots] = candidates[0]!;
    const ledger = new Ledger(record, storeSql);
    const short = (p: string) => (p === faulty ? `${p.slice(-6)}*` : p.slice(-6));

    const results: ModeResult[] = [];
    for (const mode of modes) {
      redis = await createTestRedis();
      const port = await freePort();
      const env = {
        DEVSHARD_ADMIN_API_KEY: ADMIN,
        DEVSHARDS_JSON: '[]',
        DEVSHARD_PRIVATE_KEY: creator.exportHex(),
        DEVSHARD_CHAIN_REST: devnet.urls.chainRest,
        DEVSHARD_PUBLIC_API: devnet.urls.node,
        DATABASE_URL: db.url,
        REDIS_URL: redis.url,
        REDIS_KEY_PREFIX: redis.prefix,
        DEVSHARD_PORT: String(port),
        GATEWAY_LISTEN_HOST: '127.0.0.1',
        GATEWAY_PROXY_INTERNAL_URL: `http://127.0.0.1:${port}`,
        GATEWAY_ALLOW_PRIVATE_HOSTS: 'on',
        LOG_LEVEL: 'warn',
      };
      if (results.length === 0) await bootstrapSettings(db.db, loadConfig(env));
      proxy = startTsProcess('apps/proxy/src/main.ts', env, { runtime: benchRuntime() });
      const url = `http://127.0.0.1:${port}`;
      const id = escrowId.toString();
      const deadline = Date.now() + 60_000;
      for (;;) {
        const s = await status(url, id).catch(() => undefined);
        if (s?.serving) break;
        if (Date.now() > deadline) throw new Error(`the proxy did not own the escrow:\n${proxy.output()}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const before = await status(url, id);
      const fault = FAULTS[mode];
      if (fault) await setFaults({ [faulty]: fault });
      const client = new OpenAI({
        apiKey: ADMIN,
        baseURL: `${url}/v1`,
        maxRetries: 0,
        timeout: CLIENT_TIMEOUT_MS,
      });
      const runs: ClientRun[] = [];
      for (let i = 0; i < options.requests; i++) {
        const run = await oneRequest(client, i, i % 2 === 0);
        runs.push(run);
        if (!run.served || run.ms > SLOW_MS) {
          process.stderr.write(
            `serving-faults: ${mode} request ${i}: ${run.ms.toFixed(0)} ms ${run.error ?? ''}\n`,
          );
        }
      }
      // An abandoned attempt reads on for its Finish (the session's disconnect tail, 30 s) and the
      // idle flush waits for no inference in flight; its nonce is taken already.
      const settle = Date.now() + SETTLE_WAIT_MS;
      let end = await status(url, id);
      while (end.inFlight > 0 && Date.now() < settle) {
        await new Promise((r) => setTimeout(r, 250));
        end = await status(url, id);
      }
      // The Finish of the last answers reaches the balance with the next diff: the idle flush
      // (GATEWAY_FLUSH_IDLE_MS, default 10 s), whose nonce is not counted as an extra one.
      const flushBy = Date.now() + FLUSH_WAIT_MS;
      let after = end;
      while (after.nonce === end.nonce && Date.now() < flushBy) {
        await new Promise((r) => setTimeout(r, 250));
        after = await status(url, id);
      }
      const usage = await usageEntries(redis);
      await ledger.advance(after.nonce);
      const charged = ledger.charged(before.nonce, after.nonce);
      results.push({
        mode,
        runs,
        nonces: end.nonce - before.nonce,
        feeNonces: after.nonce - before.nonce,
        flushed: after.nonce > end.nonce,
        settled: end.inFlight === 0,
        balanceDrop: before.balance - after.balance,
        charged: charged.cost,
        others: ledger.others(
          before.nonce,
          end.nonce,
          new Set([...usage.values()].flatMap((u) => u.attempts.flatMap((a) => a.burned_nonces ?? []))),
        ),
        unresolved: charged.unresolved,
        avoided: await counter(url, 'devshard_gateway_avoided_nonces_total'),
        hedges: await counter(url, 'devshard_gateway_retries_total'),
        hedgesRefused: await counter(url, 'devshard_gateway_hedges_refused_total'),
        usage,
        abandoned: [...usage.values()]
          .flatMap((u) => u.attempts)
          .filter((a) => a.nonce !== '' && a.outcome !== 'served').length,
      });
      if (fault) await setFaults(null);
      await proxy.stop('SIGTERM');
      proxy = undefined;
      await redis.cleanup();
      redis = undefined;
      process.stderr.write(`serving-faults: ${mode} done\n`);
    }

    const lines: string[] = [
      `serving on a flaky network: one escrow (${slots.length} slots over ${slotCount.size} participants: ` +
        `${[...slotCount.values()].sort((a, b) => b - a).join(', ')}), ` +
        `the proxy process with default serving settings, a fresh proxy and Redis prefix per mode; ` +
        `the fault on participant …${faulty.slice(-6)} (${faultySlots} of ${slots.length} slots); ` +
        `${options.requests} consecutive requests per mode, streamed and non-streamed in turn (openai client, ` +
        `maxRetries 0, timeout ${CLIENT_TIMEOUT_MS / 1000} s), max_tokens ${MAX_TOKENS}, mock model ` +
        `TTFT ${MODEL_TTFT_MS} ms + ${MODEL_PER_TOKEN_MS} ms per token; token_price ${config.tokenPrice}, ` +
        `fee_per_nonce ${config.feePerNonce} ngonka`,
      '',
      '| mode | served | p50 ms | p99 ms | worst ms | extra nonces | avoided nonces | hedges | billed ÷ served | ' +
        '(balance drop) | attempts on the faulty host | notes |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ];
    const problems: string[] = [];
    for (const r of results) {
      const served = r.runs.filter((x) => x.served);
      const sorted = r.runs.map((x) => x.ms).sort((a, b) => a - b);
      const tokens = served.reduce((s, x) => s + (x.usage ? x.usage.prompt + x.usage.completion : 0), 0);
      const noUsage = served.filter((x) => !x.usage).length;
      const servedCost = tokens * Number(config.tokenPrice);
      const ratio = tokens > 0 ? Number(r.charged) / servedCost : Number.NaN;
      const dropRatio =
        tokens > 0 ? Number(r.balanceDrop - config.feePerNonce * r.feeNonces) / servedCost : Number.NaN;
      const ms = (x: number) => x.toFixed(0);
      const onFaulty = [...r.usage.values()]
        .flatMap((u) => u.attempts)
        .filter((a) => a.participant === faulty && a.nonce !== '').length;
      const notes = [
        r.abandoned > 0 ? `${r.abandoned} abandoned attempt${r.abandoned === 1 ? '' : 's'}` : '',
        r.unresolved > 0 ? `${r.unresolved} at reservation` : '',
        r.others.size > 0 ? `other nonces: ${[...r.others].map(([k, n]) => `${n} ${k}`).join(', ')}` : '',
        r.settled ? '' : 'inferences still in flight at the end',
        r.flushed ? '' : 'no idle flush: the last Finish counted at its reservation',
        noUsage > 0 ? `${noUsage} served without usage` : '',
        r.hedgesRefused > 0 ? `${r.hedgesRefused} hedges refused` : '',
      ].filter(Boolean);
      lines.push(
        `| ${r.mode === BASELINE ? 'none (baseline)' : r.mode} | ${served.length} / ${r.runs.length} | ${ms(pct(sorted, 0.5))} | ` +
          `${ms(pct(sorted, 0.99))} | ${ms(sorted.at(-1) ?? Number.NaN)} | ${r.nonces - BigInt(served.length)} | ` +
          `${r.avoided} | ${r.hedges} | ${ratio.toFixed(3)} | ${dropRatio.toFixed(3)} | ${onFaulty} | ` +
          `${notes.join('; ')} |`,
      );
      const flagged = r.runs.filter((x) => !x.served || x.ms > SLOW_MS);
      if (ratio > BILLED_LIMIT) {
        problems.push(
          `${r.mode}: billed ÷ served ${ratio.toFixed(3)} (${r.charged} ngonka charged to the mode's ` +
            `inferences, ${r.unresolved} of them at their reservation; ${tokens} tokens served)`,
        );
      }
      for (const x of flagged) {
        const u = x.requestId ? r.usage.get(x.requestId) : undefined;
        const attempts = (u?.attempts ?? [])
          .map(
            (a) =>
              `#${a.nonce || '-'} ${short(a.participant) || '-'}${a.hedge ? ' hedge' : ''} ${a.outcome}` +
              `${a.error ? `/${a.error}` : ''} start ${a.started_ms}` +
              `${a.receipt_ms !== undefined ? ` receipt ${a.receipt_ms}` : ''}` +
              `${a.first_token_ms !== undefined ? ` first ${a.first_token_ms}` : ''}` +
              `${a.ended_ms !== undefined ? ` end ${a.ended_ms}` : ''}` +
              `${a.deadlines_hit.length > 0 ? ` missed ${a.deadlines_hit.join('+')}` : ''}` +
              `${a.burned_nonces?.length ? ` burned ${a.burned_nonces.join(',')}` : ''}`,
          )
          .join('; ');
        problems.push(
          `${r.mode}: request ${x.index} (${x.stream ? 'streamed' : 'non-streamed'}) ${x.ms.toFixed(0)} ms, ` +
            `${x.served ? 'served' : `client saw: ${x.error}`}; proxy status ${u?.status ?? '?'} after ` +
            `${u?.totalMs ?? '?'} ms, ` +
            `attempts: ${attempts || 'none recorded'}`,
        );
      }
    }
    lines.push(
      '',
      'served = answers with non-empty content; latency = client side, whole answer; extra nonces = nonces ' +
        'the escrow consumed up to the last answer minus requests served (burned fee-only, hedged attempts); ' +
        'avoided and hedges = devshard_gateway_avoided_nonces_total and devshard_gateway_retries_total of the ' +
        "mode's proxy; billed ÷ served = what the inferences started in the mode cost the escrow (each one's " +
        'Finish charge, replayed from the write-ahead log) ÷ (Σ prompt + completion tokens of the served answers ' +
        '× token_price), read after the idle flush that carries the last Finishes; (balance drop) = the same ' +
        'from the session balance: (drop − fee_per_nonce × nonces consumed) ÷ served, which also moves with ' +
        "earlier modes' inferences resolving meanwhile. Abandoned attempts whose reservation has not resolved " +
        'yet (no Finish or timeout applied: "at reservation") count at their reservation; a later Finish or ' +
        'timeout refunds part of it. Other nonces = nonces that neither started an inference nor were burned ' +
        `by an attempt, by the host txs they carried ("empty": none). Participant …${faulty.slice(-6)} (marked * below) carries the fault.`,
    );
    if (problems.length > 0) {
      lines.push(
        '',
        `requests failed, slower than ${SLOW_MS / 1000} s, or billed ÷ served above ${BILLED_LIMIT}:`,
      );
      for (const p of problems) lines.push(`  ${p}`);
    }
    return lines;
  } finally {
    await proxy?.stop('SIGTERM');
    await redis?.cleanup();
    await storeSql.end({ timeout: 5 });
    await Promise.allSettled([db.drop(), devnet.close()]);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const line of await servingFaults(faultOptionsFromEnv())) process.stdout.write(`${line}\n`);
  process.exit(0);
}
