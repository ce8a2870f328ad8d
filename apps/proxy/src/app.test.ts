import {
  closeRedis,
  createLogger,
  createMetricsRegistry,
  installGracefulShutdown,
  loadConfig,
  redisKeys,
  summarizeClosedWindows,
  writeSettleWindowSummary,
} from '@gonka-gateway/shared';
import {
  createTestDatabase,
  createTestRedis,
  type TestDatabase,
  type TestRedis,
} from '@gonka-gateway/shared/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProxyApp } from './app.js';

const ADMIN = `sk-admin-${'ab'.repeat(24)}`;

describe('proxy app', () => {
  let database: TestDatabase;
  let redis: TestRedis;
  beforeAll(async () => {
    [database, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
  });
  afterAll(async () => {
    await Promise.all([database.drop(), redis.cleanup()]);
  });

  const build = async (extra: Record<string, string> = {}) => {
    const config = loadConfig({
      DEVSHARD_ADMIN_API_KEY: ADMIN,
      DEVSHARDS_JSON: '[]',
      REDIS_KEY_PREFIX: redis.prefix,
      DATABASE_URL: database.url,
      GATEWAY_REPLICA_ID: 'replica-a',
      ...extra,
    });
    const registry = createMetricsRegistry({ app: 'proxy', version: 'test' });
    return buildProxyApp({ config, infra: { database, redis: redis.redis }, registry });
  };

  it('serves /v1/status without credentials, with the pool read from Redis', async () => {
    const keys = redisKeys(redis.prefix);
    await redis.redis.sadd(keys.poolModels, 'model-a');
    await redis.redis.sadd(keys.poolModel('model-a'), '42');
    await redis.redis.hset(keys.poolEscrow(42n), {
      escrow_id: '42',
      model_id: 'model-a',
      status: 'active',
      capacity_weight: '16',
      balance_estimate: '5000000000',
      nonce: '7',
      // Its owner knows the escrow's max_nonce: routing stops at 1,000,000 − 17 − 200.
      nonce_ceiling: '1000000',
      routing_stop: '999783',
      owner: 'replica-a',
      updated_at_ms: '1',
    });
    // Held: below the serving minimum until its in-flight reservations resolve (not routed).
    await redis.redis.sadd(keys.poolModel('model-a'), '43');
    await redis.redis.hset(keys.poolEscrow(43n), {
      escrow_id: '43',
      model_id: 'model-a',
      status: 'held',
      capacity_weight: '16',
      balance_estimate: '400000',
      reserved: '3000000',
      nonce: '9',
      owner: 'replica-a',
      updated_at_ms: '1',
    });
    const app = await build();
    const res = await app.inject({ method: 'GET', url: '/v1/status' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      status: 'ok',
      mode: 'pool',
      checks: { postgres: true, redis: true },
      runtimes: [],
      capacity: { models: { 'model-a': { escrows: 2, active: 1, held: 1, capacity_weight: 16 } } },
      active_requests: 0,
    });
    const devshards = (res.json().devshards as { escrow_id: string }[]).sort((a, b) =>
      a.escrow_id.localeCompare(b.escrow_id),
    );
    expect(devshards).toMatchObject([
      {
        escrow_id: '42',
        nonce: '7',
        nonce_ceiling: '1000000',
        routing_stop: '999783',
        balance_estimate: '5000000000',
        reserved: '0',
        owner: 'replica-a',
      },
      // No ceiling read yet: the stop of the protocol's default max_nonce.
      {
        escrow_id: '43',
        status: 'held',
        nonce_ceiling: null,
        routing_stop: '19800',
        balance_estimate: '400000',
        reserved: '3000000',
      },
    ]);
    await app.close();
  });

  it('lists on /v1/status the escrows whose settle window closed unsettled (the controller writes them)', async () => {
    const keys = redisKeys(redis.prefix);
    const app = await build();
    await redis.redis.del(keys.settleWindowClosed);
    expect((await app.inject({ method: 'GET', url: '/v1/status' })).json().settle_window_closed).toBeNull();
    const escrow = {
      escrow_id: '7',
      model_id: 'model-a',
      amount: '5000000000',
      epoch_index: '3',
      state: 'finalized',
    };
    await writeSettleWindowSummary(redis.redis, keys, summarizeClosedWindows([escrow], 1_000));
    expect((await app.inject({ method: 'GET', url: '/v1/status' })).json().settle_window_closed).toEqual({
      escrows: [escrow],
      total_amount: '5000000000',
      updated_at: new Date(1_000).toISOString(),
    });
    await app.close();
  });

  it('serves Prometheus metrics with the build-info gauge', async () => {
    const app = await build();
    const res = await app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/plain');
    expect(res.body).toMatch(/devshard_gateway_build_info\{app="proxy",version="test",node="v\d+/);
    expect(res.body).toContain('devshard_gateway_process_cpu_user_seconds_total');
    await app.close();
  });

  it('answers unknown routes with an OpenAI-shaped 404', async () => {
    const app = await build();
    const res = await app.inject({ method: 'GET', url: '/v1/nothing' });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('not_found');
    await app.close();
  });
});

describe('graceful shutdown', () => {
  it('stops accepting, finishes the in-flight request, closes pools and exits 0', async () => {
    const [database, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
    const config = loadConfig({
      DEVSHARD_ADMIN_API_KEY: ADMIN,
      DEVSHARDS_JSON: '[]',
      REDIS_KEY_PREFIX: redis.prefix,
      DATABASE_URL: database.url,
    });
    const registry = createMetricsRegistry({ app: 'proxy', version: 'test' });
    const app = await buildProxyApp({ config, infra: { database, redis: redis.redis }, registry });
    const order: string[] = [];
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    let started!: () => void;
    const inFlight = new Promise<void>((r) => {
      started = r;
    });
    const onResponse = async () => {
      order.push('response');
    };
    app.get('/slow', { onResponse }, async () => {
      started();
      await released;
      return { done: true };
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };
    const exits: number[] = [];
    const shutdown = installGracefulShutdown({
      server: app,
      resources: [
        async () => {
          order.push('pools');
          await closeRedis(redis.redis);
          await database.close();
        },
      ],
      logger: createLogger({ level: 'silent' }),
      exit: (code) => exits.push(code),
      signals: false,
    });

    const slow = fetch(`http://127.0.0.1:${port}/slow`).then(async (r) => ({
      status: r.status,
      body: await r.json(),
    }));
    await inFlight;
    const stopping = shutdown();
    // 1. new connections are refused while the in-flight request is still running
    await expect(fetch(`http://127.0.0.1:${port}/v1/status`)).rejects.toThrow();
    expect(exits).toEqual([]);
    // 2. the in-flight request completes normally
    release();
    expect(await slow).toEqual({ status: 200, body: { done: true } });
    await stopping;
    // 3. pools closed after the request, then exit 0
    expect(order).toEqual(['response', 'pools']);
    expect(redis.redis.status).toBe('end');
    expect(exits).toEqual([0]);
    await (await import('@gonka-gateway/shared/testing')).dropTestDatabase(database.name);
  });
});
