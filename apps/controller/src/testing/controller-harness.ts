// A controller app on the devnet for tests: its own database, its own Redis prefix, the devnet's
// chain and node on ephemeral ports, the devnet clock for unordered-tx timeouts, fast tx polling.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ChainClient, queryChainId } from '@gonka-gateway/chain';
import {
  type DevAccount,
  type Devnet,
  type DevnetOptions,
  devnetChainClient,
  GNK,
  QWEN_MODEL,
  startDevnet,
} from '@gonka-gateway/devnet';
import {
  bootstrapSettings,
  createLogger,
  createMetricsRegistry,
  loadConfig,
  redisKeys,
} from '@gonka-gateway/shared';
import {
  createTestDatabase,
  createTestRedis,
  type TestDatabase,
  type TestRedis,
} from '@gonka-gateway/shared/testing';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import postgres, { type Sql } from 'postgres';
import { buildControllerApp } from '../app.js';
import { type ControllerContext, createControllerContext } from '../controller-context.js';
import { devnetSessionClock } from './devnet-clock.js';

export const ADMIN_KEY = `sk-admin-${'cd'.repeat(24)}`;
export const ENCRYPTION_KEY = 'ef'.repeat(32);

export interface ControllerHarness {
  devnet: Devnet;
  database: TestDatabase;
  /** A plain postgres.js pool on the test database (drizzle's wrapper changes json/date handling). */
  sql: Sql;
  redis: TestRedis;
  chain: ChainClient;
  chainId: string;
  env: Record<string, string>;
  account(name: string): DevAccount;
  build(options?: {
    encryption?: boolean;
    jobs?: boolean;
    drainWaitMs?: number;
    /** Another chain client for this app (e.g. one whose node is unreachable). */
    chain?: ChainClient;
    /** How long POST /v1/admin/escrows waits for its create job before answering 202. */
    createWaitMs?: number;
    /** Extra configuration variables (e.g. DEVSHARDS_JSON). */
    config?: Record<string, string>;
    firstStart?: boolean;
  }): Promise<FastifyInstance>;
  /** A context like the app's, for driving escrow/ and jobs/ functions directly. */
  context(overrides?: {
    chain?: ChainClient;
    poll?: { intervalMs: number; timeoutMs: number };
  }): ControllerContext;
  storageDir: string;
  close(): Promise<void>;
}

/**
 * `devnet`: overrides of the devnet options (a shorter epoch schedule for rotation tests, genesis
 * params such as approved_versions).
 */
export async function startControllerHarness(
  devnetOptions: Pick<DevnetOptions, 'epoch' | 'blockIntervalMs' | 'params'> = {},
): Promise<ControllerHarness> {
  const devnet = await startDevnet({
    ports: 'ephemeral',
    blockIntervalMs: 50,
    env: {},
    epoch: { epochLength: 4_000 },
    ...devnetOptions,
  });
  const [database, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
  const chain = devnetChainClient(devnet);
  const chainId = await queryChainId(chain);
  const account = (name: string) => {
    const found = devnet.accounts.find((a) => a.name === name);
    if (!found) throw new Error(`no dev account ${name}`);
    return found;
  };
  const env: Record<string, string> = {
    CREATOR_KEY: account('creator-0').key.exportHex(),
    CREATOR_1_KEY: account('creator-1').key.exportHex(),
    OUTSIDER_KEY: account('outsider').key.exportHex(),
    DEVSHARD_PRIVATE_KEY: account('creator-0').key.exportHex(),
  };
  const apps: FastifyInstance[] = [];
  const sql = postgres(database.url, { max: 3, onnotice: () => {} });
  const storageDir = await mkdtemp(join(tmpdir(), 'controller-test-'));
  const nowNs = () => devnet.core.blocks.clockNs();
  return {
    devnet,
    database,
    sql,
    redis,
    chain,
    chainId,
    env,
    account,
    storageDir,
    context(overrides = {}) {
      return createControllerContext({
        sql,
        redis: redis.redis,
        keys: redisKeys(redis.prefix),
        chain: overrides.chain ?? chain,
        env,
        encryptionKey: Buffer.from(ENCRYPTION_KEY, 'hex'),
        gasLimit: 700_000n,
        logger: createLogger({ level: 'warn', name: 'controller-test' }),
        poll: overrides.poll ?? { intervalMs: 20, timeoutMs: 20_000 },
        nowNs,
        sessionClock: devnetSessionClock(devnet),
        storageDir,
        controllerId: 'controller-test',
        drainWaitMs: 2_000,
      });
    },
    async build(options = {}) {
      const config = loadConfig({
        DEVSHARD_ADMIN_API_KEY: ADMIN_KEY,
        DEVSHARDS_JSON: '[]',
        DATABASE_URL: database.url,
        DEVSHARD_STORAGE_DIR: storageDir,
        REDIS_KEY_PREFIX: redis.prefix,
        DEVSHARD_CHAIN_REST: devnet.urls.chainRest,
        DEVSHARD_PUBLIC_API: devnet.urls.node,
        ...(options.encryption === false ? {} : { GATEWAY_ENCRYPTION_KEY: ENCRYPTION_KEY }),
        ...options.config,
      });
      await bootstrapSettings(database.db, config);
      const app = await buildControllerApp({
        config,
        infra: { database, redis: redis.redis },
        registry: createMetricsRegistry({ app: 'controller', version: 'test' }),
        chain: options.chain ?? chain,
        env,
        nowNs,
        sessionClock: devnetSessionClock(devnet),
        drainWaitMs: options.drainWaitMs ?? 2_000,
        poll: { intervalMs: 20, timeoutMs: 20_000 },
        jobs: options.jobs ?? false,
        ...(options.createWaitMs === undefined ? {} : { createWaitMs: options.createWaitMs }),
        firstStart: options.firstStart ?? false,
      });
      apps.push(app);
      return app;
    },
    async close() {
      await Promise.all(apps.map((a) => a.close()));
      await sql.end({ timeout: 5 });
      await rm(storageDir, { recursive: true, force: true });
      await Promise.all([database.drop(), redis.cleanup(), devnet.close()]);
    },
  };
}

export const adminHeaders = (extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${ADMIN_KEY}`,
  ...extra,
});

/** One admin API call over Fastify inject. */
export function adminInject(
  app: FastifyInstance,
  method: 'GET' | 'POST' | 'DELETE',
  url: string,
  payload?: object,
): Promise<LightMyRequestResponse> {
  return app.inject({ method, url, headers: adminHeaders(), ...(payload ? { payload } : {}) });
}

/** POST /v1/admin/escrows for 5 GNK of Qwen from CREATOR_KEY, registered; the new escrow's id. */
export async function createRegisteredEscrow(app: FastifyInstance, chainId: string): Promise<bigint> {
  const res = await adminInject(app, 'POST', '/v1/admin/escrows', {
    amount: (5n * GNK).toString(),
    model_id: QWEN_MODEL,
    chain_id: chainId,
    private_key_env: 'CREATOR_KEY',
    register: true,
  });
  if (res.statusCode !== 200) throw new Error(`create answered ${res.statusCode}: ${res.body}`);
  return BigInt(res.json().escrow_id);
}
