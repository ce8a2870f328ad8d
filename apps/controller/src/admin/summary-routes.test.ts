// GET /v1/admin/summary against real Postgres and Redis: funds per model from the registered
// escrows, traffic totalled from the /metrics of the replicas listed in the Redis replica directory
// (a stand-in replica here, a real proxy in tests/console), and the admin key it needs. Also the
// console's static route (console-plugin.ts): served without the key, with its security headers.
import { findEscrowSettledEvents, lookupTx } from '@gonka-gateway/chain';
import { ReplicaDirectory } from '@gonka-gateway/escrow-runtime';
import { METRIC_PREFIX, redisKeys } from '@gonka-gateway/shared';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminHeaders,
  type ControllerHarness,
  createRegisteredEscrow,
  startControllerHarness,
} from '../testing/controller-harness.js';
import { parsePrometheusText, quantile } from './prometheus-text.js';

const GNK = 1_000_000_000n;

/** A funds_history point's amounts, as the API writes them (decimal strings). */
const amounts = (locked: bigint, spent: bigint, fees: bigint, returned: bigint) => ({
  locked: locked.toString(),
  spent: spent.toString(),
  fees: fees.toString(),
  returned: returned.toString(),
});

/** A replica's /metrics as prom-client writes it: `requests` answered, `failed` of them with 502. */
function metricsText(requests: number, failed: number): string {
  const upstream = [
    [100, requests / 2],
    [500, requests],
    ['+Inf', requests],
  ];
  return [
    `# HELP ${METRIC_PREFIX}requests_total Chat requests by route, model and HTTP status.`,
    `# TYPE ${METRIC_PREFIX}requests_total counter`,
    `${METRIC_PREFIX}requests_total{route="chat",model="m",status="200"} ${requests - failed}`,
    `${METRIC_PREFIX}requests_total{route="chat",model="m",status="502"} ${failed}`,
    `${METRIC_PREFIX}chat_in_flight 2`,
    ...upstream.map(([le, n]) => `${METRIC_PREFIX}upstream_latency_ms_bucket{le="${le}"} ${n}`),
    `${METRIC_PREFIX}upstream_latency_ms_count ${requests}`,
    '',
  ].join('\n');
}

describe('admin summary', () => {
  let h: ControllerHarness;
  let app: FastifyInstance;
  let replica: FastifyInstance;
  let directory: ReplicaDirectory;
  let served = { requests: 10, failed: 1 };
  beforeAll(async () => {
    h = await startControllerHarness();
    app = await h.build();
    replica = Fastify();
    replica.get('/metrics', async () => metricsText(served.requests, served.failed));
    const url = await replica.listen({ host: '127.0.0.1', port: 0 });
    directory = new ReplicaDirectory({
      redis: h.redis.redis,
      keys: redisKeys(h.redis.prefix),
      replicaId: 'replica-under-test',
      url,
      ttlMs: 60_000,
    });
    await directory.register();
  }, 60_000);
  afterAll(async () => {
    await directory?.stop();
    await replica?.close();
    await h?.close();
  });

  const summary = async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/admin/summary', headers: adminHeaders() });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };

  it('refuses a call without the admin key or with a wrong one', async () => {
    expect((await app.inject({ method: 'GET', url: '/v1/admin/summary' })).statusCode).toBe(401);
    const wrong = await app.inject({
      method: 'GET',
      url: '/v1/admin/summary',
      headers: { authorization: 'Bearer sk-admin-wrong' },
    });
    expect(wrong.statusCode).toBe(401);
  });

  it('totals funds per model and the replicas’ traffic over the time between two reads', async () => {
    const id = await createRegisteredEscrow(app, h.chainId);
    const first = await summary();
    expect(first.chain_id).toBe(h.chainId);
    expect(first.funds).toHaveLength(1);
    expect(first.funds[0]).toMatchObject({ escrows: 1, locked: (5n * GNK).toString(), returned: '0' });
    expect(first.traffic.replicas).toEqual([
      expect.objectContaining({
        replica_id: 'replica-under-test',
        ok: true,
        requests_total: 10,
        errors_total: 1,
      }),
    ]);
    // The first read has no window yet: no rate, and latencies since the replica started.
    expect(first.traffic.window_s).toBeNull();
    expect(first.traffic.latency_over).toBe('since_start');
    expect(first.traffic.upstream_p50_ms).toBe(100);
    // No proxy owns it, so it has no pool entry and no balance estimate to burn from.
    expect(first.burn).toEqual([]);
    expect(first.settlements).toEqual([]);
    expect(id).toBeGreaterThan(0n);
    // The history: a step up at the registration, and a last point at the read equal to the totals.
    const [registered] = await h.sql<{ created_at: Date }[]>`
      select created_at from escrows where escrow_id = ${id.toString()}::numeric`;
    expect(first.funds_history).toEqual([
      {
        model_id: first.funds[0].model_id,
        points: [
          { at: registered!.created_at.toISOString(), ...amounts(5n * GNK, 0n, 0n, 0n) },
          { at: first.generated_at, ...amounts(5n * GNK, 0n, 0n, 0n) },
        ],
      },
    ]);

    // A read inside the same second answers the previous one (one scrape per second at most).
    expect((await summary()).generated_at).toBe(first.generated_at);

    served = { requests: 30, failed: 3 };
    await new Promise((r) => setTimeout(r, 1_100));
    const second = await summary();
    const { traffic } = second;
    expect(traffic.window_s).toBeGreaterThan(1);
    // window_s is rounded to 0.1 s: the counts it implies are near 20 and 2.
    expect(traffic.requests_per_s * traffic.window_s).toBeGreaterThan(18);
    expect(traffic.requests_per_s * traffic.window_s).toBeLessThan(22);
    expect(traffic.errors_per_s * traffic.window_s).toBeCloseTo(2, 0);
    expect(traffic.in_flight).toBe(2);
    // 20 new observations, 10 at most 100 ms and 10 in (100, 500]: p50 = 100, p99 inside the second.
    expect(traffic.latency_over).toBe('window');
    expect(traffic.upstream_p50_ms).toBe(100);
    expect(traffic.upstream_p99_ms).toBeGreaterThan(400);
    expect(traffic.upstream_p99_ms).toBeLessThanOrEqual(500);
  }, 90_000);

  it('draws funds over time from the escrows’ rows and settle events, the same after a restart', async () => {
    const second = await createRegisteredEscrow(app, h.chainId);
    // Settles run on the job workers, which this file's app leaves off: a second controller runs them.
    const worker = await h.build({ jobs: true });
    const settled = await worker.inject({
      method: 'POST',
      url: '/v1/admin/devshards/settle',
      headers: adminHeaders(),
      payload: { private_key_env: 'CREATOR_KEY', escrow_ids: [second.toString()] },
    });
    expect(settled.statusCode, settled.body).toBe(200);
    expect(settled.body).toMatch(/"settled":1/);
    await new Promise((r) => setTimeout(r, 1_100));
    const s = await summary();
    const [tx] = await h.sql<{ tx_hash: string; updated_at: Date }[]>`
      select tx_hash, updated_at from chain_tx_commitments
       where kind = 'settle_escrow' and status = 'included' and escrow_id = ${second.toString()}::numeric`;
    const found = await lookupTx(h.chain, tx!.tx_hash);
    const [event] = findEscrowSettledEvents(
      found.kind === 'found' && found.outcome.status === 'included' ? found.outcome.events : [],
    );
    const rows = await h.sql<{ escrow_id: string; created_at: Date }[]>`
      select escrow_id::text as escrow_id, created_at from escrows order by created_at`;
    expect(rows.map((r) => r.escrow_id)).toEqual([rows[0]!.escrow_id, second.toString()]);
    const { totalPayout, fees, remainder } = event!;
    expect(s.funds_history).toHaveLength(1);
    expect(s.funds_history[0].points).toEqual([
      // The first escrow (still live, never served: nothing spent), then the second one locked …
      { at: rows[0]!.created_at.toISOString(), ...amounts(5n * GNK, 0n, 0n, 0n) },
      { at: rows[1]!.created_at.toISOString(), ...amounts(10n * GNK, 0n, 0n, 0n) },
      // … and released at its settle, with the settle event's split.
      { at: tx!.updated_at.toISOString(), ...amounts(5n * GNK, totalPayout, fees, remainder) },
      { at: s.generated_at, ...amounts(5n * GNK, totalPayout, fees, remainder) },
    ]);
    expect(totalPayout + remainder).toBe(5n * GNK);
    // The last point is the totals of the funds table.
    const { locked, spent, fees: totalFees, returned } = s.funds[0];
    expect(s.funds_history[0].points.at(-1)).toMatchObject({ locked, spent, fees: totalFees, returned });

    // A restarted controller (a new app: no settle event read yet) draws the same history.
    const restarted = await h.build();
    const again = await restarted.inject({
      method: 'GET',
      url: '/v1/admin/summary',
      headers: adminHeaders(),
    });
    expect(again.statusCode, again.body).toBe(200);
    const points = again.json().funds_history[0].points;
    expect(points.slice(0, -1)).toEqual(s.funds_history[0].points.slice(0, -1));
    expect(points.at(-1)).toMatchObject({ locked, spent, fees: totalFees, returned });
  }, 90_000);

  it('reports a replica whose /metrics does not answer, and still answers', async () => {
    await replica.close();
    await new Promise((r) => setTimeout(r, 1_100));
    const s = await summary();
    expect(s.traffic.replicas[0]).toMatchObject({ replica_id: 'replica-under-test', ok: false });
    expect(s.traffic.replicas[0].error).toBeTruthy();
  });

  it('serves the console page without the admin key, same-origin only', async () => {
    const res = await app.inject({ method: 'GET', url: '/console' });
    if (res.statusCode === 503) {
      // Sources without a build: the page says how to build it.
      expect(res.body).toMatch(/pnpm build/);
      return;
    }
    expect(res.statusCode).toBe(302);
    const page = await app.inject({ method: 'GET', url: '/console/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.headers['content-security-policy']).toMatch(/connect-src 'self'/);
    expect(page.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    expect((await app.inject({ method: 'GET', url: '/console/app.js' })).statusCode).toBe(200);
    // A page, not an API: the OpenAPI document leaves it out and lists the summary.
    const paths = Object.keys((await app.inject({ method: 'GET', url: '/openapi.json' })).json().paths);
    expect(paths).toContain('/v1/admin/summary');
    expect(paths.filter((p) => p.startsWith('/console'))).toEqual([]);
    // Only the build's files: not the type check's output beside them.
    expect((await app.inject({ method: 'GET', url: '/console/.types/main.d.ts' })).statusCode).toBe(404);
  });
});

describe('prometheus text', () => {
  it('reads labelled samples and interpolates a quantile inside its bucket', () => {
    const samples = parsePrometheusText('# HELP x y\nx_total{a="1",b="q\\"x"} 3\nx_total 4\n');
    expect(samples).toEqual([
      { name: 'x_total', labels: { a: '1', b: 'q"x' }, value: 3 },
      { name: 'x_total', labels: {}, value: 4 },
    ]);
    expect(
      quantile(
        [
          [10, 0],
          [20, 10],
          [Number.POSITIVE_INFINITY, 10],
        ],
        0.5,
      ),
    ).toBe(15);
    expect(quantile([[10, 0]], 0.5)).toBeNull();
  });
});
