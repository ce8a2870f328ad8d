// GET /readyz of a whole proxy app on real Postgres and Redis: 200 only once this replica can route
// (the pool and the settings read, Postgres and Redis answering), never waiting on the chain or the
// public node. The load balancer takes a replica in on this answer (deploy/src/load-balancer.ts).
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { createMetricsRegistry, loadConfig, redisKeys } from '@gonka-gateway/shared';
import {
  createTestDatabase,
  createTestRedis,
  type TestDatabase,
  type TestRedis,
} from '@gonka-gateway/shared/testing';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildProxyApp } from '../app.js';

const ADMIN = `sk-admin-${'ad'.repeat(24)}`;

let database: TestDatabase;
let redis: TestRedis;
/** Accepts connections and never answers: a chain REST and public node that hang. */
let silent: Server;
const held: Socket[] = [];
/** Requests the silent server holds that their client has not given up on. */
const waiting = new Set<Socket>();
let app: FastifyInstance | undefined;

beforeAll(async () => {
  [database, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
  silent = createServer((socket) => {
    held.push(socket);
    waiting.add(socket);
    socket.on('close', () => waiting.delete(socket));
    socket.resume();
  }).listen(0, '127.0.0.1');
  await once(silent, 'listening');
});
afterEach(async () => {
  await app?.close();
  app = undefined;
});
afterAll(async () => {
  for (const socket of held) socket.destroy();
  silent.close();
  await Promise.all([database.drop(), redis.cleanup()]);
});

async function build(extra: Record<string, string> = {}): Promise<FastifyInstance> {
  const { port } = silent.address() as { port: number };
  const config = loadConfig({
    DEVSHARD_ADMIN_API_KEY: ADMIN,
    DEVSHARDS_JSON: '[]',
    REDIS_KEY_PREFIX: redis.prefix,
    DATABASE_URL: database.url,
    DEVSHARD_CHAIN_REST: `http://127.0.0.1:${port}`,
    DEVSHARD_PUBLIC_API: `http://127.0.0.1:${port}`,
    GATEWAY_REPLICA_ID: 'ready-test',
    ...extra,
  });
  const registry = createMetricsRegistry({ app: 'proxy', version: 'test' });
  app = await buildProxyApp({ config, infra: { database, redis: redis.redis }, registry });
  await app.ready();
  return app;
}

const readyz = async (a: FastifyInstance) => {
  const res = await a.inject({ method: 'GET', url: '/readyz' });
  return { status: res.statusCode, body: res.json() as { status: string; checks: Record<string, boolean> } };
};

describe('GET /readyz', () => {
  it('is ready while the chain REST and the public node hang', async () => {
    // `off` makes the replica read the PoC phase from the node (no controller published it).
    const a = await build({ DEVSHARD_POC_REQUEST_MODE: 'off' });
    await expect.poll(() => waiting.size, { timeout: 10_000 }).toBeGreaterThan(0);
    expect(await readyz(a)).toEqual({
      status: 200,
      body: { status: 'ready', checks: { postgres: true, redis: true, pool: true, settings: true } },
    });
    expect((await a.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    // Ready while the node's answer is still awaited (its client gives up after 10 s).
    expect(waiting.size).toBeGreaterThan(0);
  });

  it('is not ready until the settings have been read', async () => {
    await database.sql`alter table settings rename to settings_away`;
    try {
      const a = await build();
      expect(await readyz(a)).toEqual({
        status: 503,
        body: { status: 'not_ready', checks: { postgres: true, redis: true, pool: true, settings: false } },
      });
      expect((await a.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    } finally {
      await database.sql`alter table settings_away rename to settings`;
    }
    await expect.poll(async () => (await readyz(app!)).status, { timeout: 10_000 }).toBe(200);
  });

  it('is not ready until the pool has been read', async () => {
    const keys = redisKeys(redis.prefix);
    // The list of models is not a set: every pool read fails (WRONGTYPE).
    await redis.redis.set(keys.poolModels, 'not a set');
    try {
      const a = await build();
      expect(await readyz(a)).toEqual({
        status: 503,
        body: { status: 'not_ready', checks: { postgres: true, redis: true, pool: false, settings: true } },
      });
    } finally {
      await redis.redis.del(keys.poolModels);
    }
    await expect.poll(async () => (await readyz(app!)).status, { timeout: 10_000 }).toBe(200);
  });
});
