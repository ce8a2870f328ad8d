// GET /v1/admin/summary: what the operator console's Overview and Escrows pages need and no other
// route has (operator-guide.md §12), behind the admin key like every admin route.
// - funds per model: locked (deposits of unsettled escrows), balance (the owners' balance estimates),
//   spent, fees and returned. A settled escrow's split is its settle event's (total_payout, fees,
//   remainder, read once from the chain and kept: an included tx never changes); an unsettled one has
//   spent = amount − balance estimate and the fees of its finalize document, if any.
// - traffic: the proxies' own /metrics, read from the replica directory in Redis (escrow-runtime
//   claim/replica-directory.ts), so the console works without a Prometheus server: requests/s and
//   errors/s over the time since the previous read, chats in flight, and p50/p99 of the host call
//   and of the first token from the histogram buckets observed in that window (since the replicas
//   started when the window saw no host call).
// - funds_history: the same four amounts per model over time, as a step series sampled at each
//   escrow's events, rebuilt on every read from the system of record so a restarted controller draws
//   the same history: an escrow locks its deposit at its registration (escrows.created_at) and
//   releases it at its settle (when its settle tx was recorded included), adding the settle event's
//   spent, fees and returned then; a last point at the read adds what live escrows spent so far
//   (deposit − balance estimate) and their finalize fees, so it equals the funds totals.
// - burn: per escrow, how fast its balance estimate fell over the last minutes of reads, and the
//   time to depletion at that rate.
// Reads are at most one per second whatever the number of open consoles: a read inside that second
// answers the previous one, so the console adds at most one /metrics scrape per replica per second
// and nothing to the proxies' request path.
import { type ChainClient, findEscrowSettledEvents, lookupTx, queryChainId } from '@gonka-gateway/chain';
import { ReplicaDirectory } from '@gonka-gateway/escrow-runtime';
import { METRIC_PREFIX, openAIErrorSchema } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import type {
  AdminSummary,
  EscrowBurn,
  EscrowView,
  FundsPoint,
  ModelFunds,
  ModelFundsHistory,
  ReplicaTraffic,
  SettledEscrowSplit,
  Traffic,
} from '../admin-api.js';
import { settlesIncludedAt } from '../chain/commitments.js';
import type { ControllerContext } from '../controller-context.js';
import { readEscrowViews } from '../escrow/escrow-view.js';
import {
  addBuckets,
  type Buckets,
  histogramBuckets,
  parsePrometheusText,
  quantile,
  subtractBuckets,
} from './prometheus-text.js';

/** A replica's /metrics that has not answered in this long is reported down for this read. */
const SCRAPE_TIMEOUT_MS = 1_500;
/** Reads closer together than this answer the previous read. */
const MIN_READ_INTERVAL_MS = 1_000;
/** Balance samples older than this are dropped from the burn rate. */
const BURN_WINDOW_MS = 5 * 60_000;
/** Settled escrows whose settle event is looked up per read (the rest on later reads). */
const SETTLE_LOOKUPS_PER_READ = 20;
/** Points kept per model in funds_history: the newest events (each point holds running totals). */
const HISTORY_POINTS = 500;

interface Scrape {
  at: number;
  requests: number;
  errors: number;
  inFlight: number;
  upstream: Buckets;
  firstToken: Buckets;
}

interface SettledSplit {
  spent: bigint;
  fees: bigint;
  returned: bigint;
}

export interface SummaryOptions {
  ctx: ControllerContext;
  /** Where a replica's metrics are read (tests stub it); default fetch of `${url}/metrics`. */
  fetchMetrics?: (url: string) => Promise<string>;
  now?: () => number;
}

async function fetchMetrics(url: string): Promise<string> {
  const res = await fetch(`${url.replace(/\/$/, '')}/metrics`, {
    signal: AbortSignal.timeout(SCRAPE_TIMEOUT_MS),
  });
  if (!res.ok) throw new Error(`GET /metrics answered ${res.status}`);
  return res.text();
}

function readScrape(text: string, at: number): Scrape {
  const samples = parsePrometheusText(text);
  let requests = 0;
  let errors = 0;
  let inFlight = 0;
  for (const s of samples) {
    if (s.name === `${METRIC_PREFIX}requests_total`) {
      requests += s.value;
      // An answer the client did not get as asked: 4xx refusals (limits, bad keys) and 5xx alike.
      if (Number(s.labels.status) >= 400) errors += s.value;
    } else if (s.name === `${METRIC_PREFIX}chat_in_flight`) inFlight += s.value;
  }
  return {
    at,
    requests,
    errors,
    inFlight,
    upstream: histogramBuckets(samples, `${METRIC_PREFIX}upstream_latency_ms`),
    firstToken: histogramBuckets(samples, `${METRIC_PREFIX}time_to_first_token_ms`),
  };
}

function round(n: number, digits?: number): number;
function round(n: number | null, digits?: number): number | null;
function round(n: number | null, digits = 1): number | null {
  return n === null ? null : Number(n.toFixed(digits));
}

async function settledSplit(chain: ChainClient, txHash: string): Promise<SettledSplit | undefined> {
  const found = await lookupTx(chain, txHash).catch(() => undefined);
  if (found?.kind !== 'found' || found.outcome.status !== 'included') return undefined;
  const [event] = findEscrowSettledEvents(found.outcome.events);
  return event ? { spent: event.totalPayout, fees: event.fees, returned: event.remainder } : undefined;
}

/** A change of a model's funds at one time (ms): deltas of the four running totals. */
interface FundsEvent {
  at: number;
  locked: bigint;
  spent: bigint;
  fees: bigint;
  returned: bigint;
}

const NO_CHANGE = { locked: 0n, spent: 0n, fees: 0n, returned: 0n } as const;

/**
 * The running totals after each distinct event time, oldest first, ending with a point at the read
 * (`at`) so the steps reach the present; events at one time make one point.
 */
function stepSeries(events: FundsEvent[], at: number): FundsPoint[] {
  // An escrow registered while this read ran may be newer than the read's own time.
  const end = events.reduce((max, e) => Math.max(max, e.at), at);
  const sorted = [...events, { at: end, ...NO_CHANGE }].sort((a, b) => a.at - b.at);
  const sum = { locked: 0n, spent: 0n, fees: 0n, returned: 0n };
  const points: FundsPoint[] = [];
  sorted.forEach((e, i) => {
    sum.locked += e.locked;
    sum.spent += e.spent;
    sum.fees += e.fees;
    sum.returned += e.returned;
    if (sorted[i + 1]?.at === e.at) return;
    points.push({
      at: new Date(e.at).toISOString(),
      locked: sum.locked.toString(),
      spent: sum.spent.toString(),
      fees: sum.fees.toString(),
      returned: sum.returned.toString(),
    });
  });
  return points.slice(-HISTORY_POINTS);
}

const amountSchema = { type: 'string', description: 'ngonka, decimal string.' } as const;
const nullableNumber = { type: ['number', 'null'] } as const;
const modelFundsSchema = {
  type: 'object',
  properties: {
    model_id: { type: 'string' },
    escrows: { type: 'integer' },
    serving: { type: 'integer', description: 'Escrows in the pool with status active.' },
    locked: amountSchema,
    balance: amountSchema,
    spent: amountSchema,
    fees: amountSchema,
    returned: amountSchema,
  },
} as const;

export async function summaryRoutes(app: FastifyInstance, options: SummaryOptions): Promise<void> {
  const { ctx } = options;
  const now = options.now ?? Date.now;
  const scrape = options.fetchMetrics ?? fetchMetrics;
  const directory = new ReplicaDirectory({
    redis: ctx.redis,
    keys: ctx.keys,
    replicaId: ctx.controllerId,
    url: '',
    // Only entries() is used: a replica counts as fresh when over half of this is left.
    ttlMs: 1,
  });
  const previous = new Map<string, Scrape>();
  const settled = new Map<string, SettledSplit>();
  const balances = new Map<number, { at: number; balance: bigint }[]>();
  let last: { at: number; body: Promise<AdminSummary> } | undefined;
  let chainId: string | undefined;
  // The chain id a new escrow needs (POST /v1/admin/escrows); it never changes, so one read is kept.
  const readChainId = async () => {
    chainId ??= await queryChainId(ctx.chain).catch(() => undefined);
    return chainId ?? null;
  };

  async function traffic(): Promise<Traffic> {
    const replicas = await directory.entries();
    const reads = await Promise.all(
      replicas.map(async (r) => {
        try {
          return { r, scrape: readScrape(await scrape(r.url), now()), error: null };
        } catch (err) {
          return { r, scrape: null, error: (err as Error).message };
        }
      }),
    );
    const windows: { upstream: Buckets; firstToken: Buckets }[] = [];
    const cumulative: { upstream: Buckets; firstToken: Buckets }[] = [];
    let requestsPerS = 0;
    let errorsPerS = 0;
    let inFlight = 0;
    let windowS: number | null = null;
    const rows = reads.map(({ r, scrape: cur, error }): ReplicaTraffic => {
      if (!cur) return { replica_id: r.replicaId, url: r.url, ok: false, error };
      const prev = previous.get(r.replicaId);
      previous.set(r.replicaId, cur);
      // A restarted replica starts its counters at zero again: its window starts over too.
      const usable = prev && cur.requests >= prev.requests && cur.at > prev.at ? prev : undefined;
      const dt = usable ? (cur.at - usable.at) / 1_000 : null;
      const rps = usable && dt ? (cur.requests - usable.requests) / dt : null;
      const eps = usable && dt ? (cur.errors - usable.errors) / dt : null;
      requestsPerS += rps ?? 0;
      errorsPerS += eps ?? 0;
      inFlight += cur.inFlight;
      if (dt !== null) windowS = Math.max(windowS ?? 0, dt);
      cumulative.push({ upstream: cur.upstream, firstToken: cur.firstToken });
      if (usable) {
        windows.push({
          upstream: subtractBuckets(cur.upstream, usable.upstream),
          firstToken: subtractBuckets(cur.firstToken, usable.firstToken),
        });
      }
      return {
        replica_id: r.replicaId,
        url: r.url,
        ok: true,
        error: null,
        requests_total: cur.requests,
        errors_total: cur.errors,
        in_flight: cur.inFlight,
        requests_per_s: round(rps, 3),
        errors_per_s: round(eps, 3),
      };
    });
    for (const id of previous.keys()) if (!replicas.some((r) => r.replicaId === id)) previous.delete(id);
    // An idle window has no observations: the latencies since the replicas started say more than none.
    const recent = addBuckets(windows.map((w) => w.upstream)).at(-1)?.[1] ?? 0;
    const source = recent > 0 ? windows : cumulative;
    const upstream = addBuckets(source.map((w) => w.upstream));
    const firstToken = addBuckets(source.map((w) => w.firstToken));
    return {
      replicas: rows,
      window_s: round(windowS),
      requests_per_s: round(requestsPerS, 3),
      errors_per_s: round(errorsPerS, 3),
      in_flight: inFlight,
      latency_over: recent > 0 ? 'window' : 'since_start',
      upstream_p50_ms: round(quantile(upstream, 0.5)),
      upstream_p99_ms: round(quantile(upstream, 0.99)),
      first_token_p50_ms: round(quantile(firstToken, 0.5)),
      first_token_p99_ms: round(quantile(firstToken, 0.99)),
    };
  }

  async function funds(
    views: EscrowView[],
    at: number,
  ): Promise<{ byModel: ModelFunds[]; settlements: SettledEscrowSplit[]; history: ModelFundsHistory[] }> {
    const [finalizeRows, settledAt] = await Promise.all([
      ctx.sql<{ escrow_id: string; fees: string }[]>`
        select escrow_id::text as escrow_id, fees::text as fees from finalize_documents`,
      // When each settle was recorded included: the step down of its escrow's locked funds.
      settlesIncludedAt(ctx.sql),
    ]);
    const finalizeFees = new Map(finalizeRows.map((r) => [Number(r.escrow_id), BigInt(r.fees)]));
    let lookups = 0;
    const settlements: SettledEscrowSplit[] = [];
    const models = new Map<
      string,
      {
        escrows: number;
        serving: number;
        locked: bigint;
        balance: bigint;
        spent: bigint;
        fees: bigint;
        returned: bigint;
      }
    >();
    const events = new Map<string, FundsEvent[]>();
    const event = (model: string, e: FundsEvent) => {
      const list = events.get(model) ?? [];
      events.set(model, list);
      list.push(e);
    };
    for (const v of views) {
      const m = models.get(v.model_id) ?? {
        escrows: 0,
        serving: 0,
        locked: 0n,
        balance: 0n,
        spent: 0n,
        fees: 0n,
        returned: 0n,
      };
      models.set(v.model_id, m);
      m.escrows++;
      const amount = BigInt(v.amount ?? '0');
      if (v.pool?.status === 'active') m.serving++;
      if (v.state === 'failed' || v.state === 'creating') continue;
      event(v.model_id, { at: Date.parse(v.created_at), ...NO_CHANGE, locked: amount });
      if (v.state === 'settled') {
        const tx = v.settle_tx_hash;
        let split = tx ? settled.get(tx) : undefined;
        if (!split && tx && lookups < SETTLE_LOOKUPS_PER_READ) {
          lookups++;
          split = await settledSplit(ctx.chain, tx);
          if (split) settled.set(tx, split);
        }
        // A settle whose event is not read yet still releases the deposit; its split joins later.
        event(v.model_id, {
          at: settledAt.get(v.escrow_id) ?? Date.parse(v.updated_at),
          locked: -amount,
          spent: split?.spent ?? 0n,
          fees: split?.fees ?? 0n,
          returned: split?.returned ?? 0n,
        });
        if (split) {
          settlements.push({
            escrow_id: v.escrow_id,
            spent: split.spent.toString(),
            fees: split.fees.toString(),
            returned: split.returned.toString(),
          });
          m.spent += split.spent;
          m.fees += split.fees;
          m.returned += split.returned;
        }
        continue;
      }
      m.locked += amount;
      const balance = v.pool ? BigInt(v.pool.balance_estimate) : amount;
      m.balance += balance;
      const spent = amount > balance ? amount - balance : 0n;
      const fees = finalizeFees.get(v.escrow_id) ?? 0n;
      m.spent += spent;
      m.fees += fees;
      // Only the current balance is known between a registration and a settle: it counts at the read.
      event(v.model_id, { at, ...NO_CHANGE, spent, fees });
    }
    const byModel = [...models.entries()]
      .sort((a, b) => (a[0] < b[0] ? -1 : 1))
      .map(([model_id, m]) => ({
        model_id,
        escrows: m.escrows,
        serving: m.serving,
        locked: m.locked.toString(),
        balance: m.balance.toString(),
        spent: m.spent.toString(),
        fees: m.fees.toString(),
        returned: m.returned.toString(),
      }));
    const history = [...events.entries()]
      .sort((a, b) => (a[0] < b[0] ? -1 : 1))
      .map(([model_id, list]) => ({ model_id, points: stepSeries(list, at) }));
    return { byModel, settlements, history };
  }

  function burn(views: EscrowView[], at: number): EscrowBurn[] {
    const seen = new Set<number>();
    const out = views.flatMap((v): EscrowBurn[] => {
      seen.add(v.escrow_id);
      if (!v.pool || v.state === 'settled') return [];
      const balance = BigInt(v.pool.balance_estimate);
      const list = (balances.get(v.escrow_id) ?? []).filter((s) => at - s.at <= BURN_WINDOW_MS);
      list.push({ at, balance });
      balances.set(v.escrow_id, list);
      const first = list[0]!;
      const dt = (at - first.at) / 1_000;
      const burned = first.balance - balance;
      const perS = dt > 0 && burned > 0n ? Number(burned) / dt : 0;
      return [
        {
          escrow_id: v.escrow_id,
          balance: balance.toString(),
          burn_per_s: round(perS, 3),
          seconds_to_depletion: perS > 0 ? Math.round(Number(balance) / perS) : null,
        },
      ];
    });
    for (const id of balances.keys()) if (!seen.has(id)) balances.delete(id);
    return out;
  }

  async function read(): Promise<AdminSummary> {
    const at = now();
    const views = await readEscrowViews(ctx);
    const [money, trafficNow, chainId] = await Promise.all([funds(views, at), traffic(), readChainId()]);
    return {
      generated_at: new Date(at).toISOString(),
      chain_id: chainId,
      funds: money.byModel,
      settlements: money.settlements,
      funds_history: money.history,
      traffic: trafficNow,
      burn: burn(views, at),
    };
  }

  app.get(
    '/v1/admin/summary',
    {
      schema: {
        description:
          'Funds per model, the proxies’ traffic from their own /metrics, and each escrow’s burn rate (the operator console’s Overview and Escrows pages).',
        response: {
          200: {
            type: 'object',
            required: [
              'generated_at',
              'chain_id',
              'funds',
              'funds_history',
              'settlements',
              'traffic',
              'burn',
            ],
            properties: {
              generated_at: { type: 'string' },
              chain_id: { type: ['string', 'null'], description: 'Null while the node does not answer.' },
              funds: { type: 'array', items: modelFundsSchema },
              settlements: {
                type: 'array',
                description: 'Each settled escrow’s split, from its settle event.',
                items: {
                  type: 'object',
                  properties: {
                    escrow_id: { type: 'integer' },
                    spent: amountSchema,
                    fees: amountSchema,
                    returned: amountSchema,
                  },
                },
              },
              funds_history: {
                type: 'array',
                description:
                  'Per model, locked, spent, fees and returned over time: a step series with a point at each registration and settle, and one at this read (equal to funds).',
                items: {
                  type: 'object',
                  properties: {
                    model_id: { type: 'string' },
                    points: {
                      type: 'array',
                      items: {
                        type: 'object',
                        properties: {
                          at: { type: 'string' },
                          locked: amountSchema,
                          spent: amountSchema,
                          fees: amountSchema,
                          returned: amountSchema,
                        },
                      },
                    },
                  },
                },
              },
              traffic: {
                type: 'object',
                properties: {
                  replicas: {
                    type: 'array',
                    items: {
                      type: 'object',
                      properties: {
                        replica_id: { type: 'string' },
                        url: { type: 'string' },
                        ok: { type: 'boolean' },
                        error: { type: ['string', 'null'] },
                        requests_total: { type: 'number' },
                        errors_total: { type: 'number' },
                        in_flight: { type: 'number' },
                        requests_per_s: nullableNumber,
                        errors_per_s: nullableNumber,
                      },
                    },
                  },
                  window_s: nullableNumber,
                  requests_per_s: { type: 'number' },
                  errors_per_s: { type: 'number' },
                  in_flight: { type: 'number' },
                  latency_over: {
                    type: 'string',
                    enum: ['window', 'since_start'],
                    description:
                      'The window’s host calls, or with none in it, every one since the replicas started.',
                  },
                  upstream_p50_ms: nullableNumber,
                  upstream_p99_ms: nullableNumber,
                  first_token_p50_ms: nullableNumber,
                  first_token_p99_ms: nullableNumber,
                },
              },
              burn: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    escrow_id: { type: 'integer' },
                    balance: amountSchema,
                    burn_per_s: { type: 'number', description: 'ngonka per second over the last minutes.' },
                    seconds_to_depletion: nullableNumber,
                  },
                },
              },
            },
          },
          401: openAIErrorSchema,
        },
      },
    },
    async () => {
      const at = now();
      if (!last || at - last.at >= MIN_READ_INTERVAL_MS) {
        const body = read();
        last = { at, body };
        // A failed read is not kept: the next call tries again.
        body.catch(() => {
          if (last?.body === body) last = undefined;
        });
      }
      return last.body;
    },
  );
}
