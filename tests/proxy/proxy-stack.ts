// Test support of the proxy end-to-end tests: a devnet in this process (chain, hosts, mock
// model), a migrated Postgres database holding escrows created on the devnet chain, a Redis prefix,
// and proxy replicas either built in this process (buildProxyApp, listening on a free port) or started
// as real OS processes exactly as ./start does (apps/proxy/src/main.ts).
import { randomBytes } from 'node:crypto';
import { QWEN_MODEL } from '@gonka-gateway/devnet';
import type { StoredDiff } from '@gonka-gateway/devshard/session';
import { PostgresSessionStore } from '@gonka-gateway/escrow-runtime';
import { buildProxyApp, type ProxyTuning } from '@gonka-gateway/proxy';
import {
  bootstrapSettings,
  createLogger,
  createMetricsRegistry,
  loadConfig,
  openDatabase,
  openRedis,
  redisKeys,
} from '@gonka-gateway/shared';
import {
  createTestDatabase,
  createTestRedis,
  type TestDatabase,
  type TestRedis,
} from '@gonka-gateway/shared/testing';
import OpenAI from 'openai';
import postgres from 'postgres';
import { Gateway, type TestEscrow } from '../devshard-devnet/harness.js';
import { freePort, type RunningProcess, startProcess } from '../support/gateway-process.js';
import { createRegisteredEscrows } from '../support/registered-escrows.js';

export const ADMIN_KEY = `sk-admin-${'ad'.repeat(24)}`;
export const USER_KEY = `sk-${'5e'.repeat(24)}`;
export const LEASE_TTL_MS = 1_500;
export { QWEN_MODEL };

/** The parts of GET /v1/status the tests read. */
export interface StatusBody {
  runtimes: { escrow_id: string; status: string; nonce: string | null; in_flight: number }[];
  devshards: { escrow_id: string; owner: string | null }[];
  replicas: { id: string; url: string; escrows_owned: number }[];
  limiter: { in_flight: number | null };
}

export interface Replica {
  readonly name: string;
  readonly url: string;
  readonly replicaId: string;
  close(): Promise<void>;
}

export interface InProcessReplica extends Replica {
  readonly app: Awaited<ReturnType<typeof buildProxyApp>>;
}

export interface ProcessReplica extends Replica {
  readonly proc: RunningProcess;
}

export class ProxyStack {
  readonly keyPrefix: string;
  readonly keys: ReturnType<typeof redisKeys>;
  readonly replicas: Replica[] = [];

  private constructor(
    readonly gateway: Gateway,
    readonly db: TestDatabase,
    readonly redis: TestRedis,
    readonly storeSql: postgres.Sql,
    readonly escrows: TestEscrow[],
  ) {
    this.keyPrefix = redis.prefix;
    this.keys = redisKeys(redis.prefix);
  }

  /**
   * Devnet, database (settings bootstrapped) and `count` escrows (5 GNK, Qwen) registered active,
   * escrow i at `tokenPrices[i]` when given (createRegisteredEscrows).
   */
  static async start(
    count: number,
    options: { redis?: TestRedis; tokenPrices?: readonly bigint[] } = {},
  ): Promise<ProxyStack> {
    const [gateway, db, redis] = await Promise.all([
      Gateway.start(),
      createTestDatabase(),
      options.redis ?? createTestRedis(),
    ]);
    const storeSql = postgres(db.url, { max: 4, onnotice: () => {} });
    const store = new PostgresSessionStore(storeSql);
    const escrows = await createRegisteredEscrows(gateway, store, db.sql, count, options.tokenPrices);
    const stack = new ProxyStack(gateway, db, redis, storeSql, escrows);
    await bootstrapSettings(db.db, loadConfig(stack.env('bootstrap', 0)));
    return stack;
  }

  /** The environment of one replica (what ./start would set), plus overrides. */
  env(name: string, port: number, extra: Record<string, string> = {}): Record<string, string> {
    const urls = this.gateway.devnet.urls;
    return {
      DEVSHARD_ADMIN_API_KEY: ADMIN_KEY,
      DEVSHARD_API_KEYS: USER_KEY,
      DEVSHARDS_JSON: '[]',
      DEVSHARD_PRIVATE_KEY: this.gateway.creator.key.exportHex(),
      DEVSHARD_CHAIN_REST: urls.chainRest,
      DEVSHARD_PUBLIC_API: urls.node,
      DATABASE_URL: this.db.url,
      REDIS_URL: this.redis.url,
      REDIS_KEY_PREFIX: this.keyPrefix,
      DEVSHARD_PORT: String(port),
      GATEWAY_LISTEN_HOST: '127.0.0.1',
      GATEWAY_PROXY_INTERNAL_URL: `http://127.0.0.1:${port}`,
      GATEWAY_REPLICA_ID: `${name}-${randomBytes(3).toString('hex')}`,
      GATEWAY_DEFAULT_MAX_TOKENS: '96',
      GATEWAY_MAX_TOKENS_CAP: '128',
      LOG_LEVEL: 'warn',
      ...extra,
    };
  }

  /** A replica built in this process (the app, its own Postgres/Redis clients). */
  async startInProcess(
    name: string,
    extra: Record<string, string> = {},
    tuning: ProxyTuning = {},
  ): Promise<InProcessReplica> {
    const port = await freePort();
    const env = this.env(name, port, extra);
    const config = loadConfig(env);
    const database = openDatabase(config.databaseUrl, { max: 4, applicationName: name });
    const redis = openRedis(config.redis.url, { name });
    const app = await buildProxyApp({
      config,
      infra: { database, redis },
      registry: createMetricsRegistry({ app: 'proxy', version: 'test' }),
      logger: createLogger({ level: env.LOG_LEVEL ?? 'warn', name }),
      env,
      tuning: {
        leaseTtlMs: LEASE_TTL_MS,
        allowPrivateHosts: true,
        flushIdleMs: 300,
        maintenanceEveryMs: 200,
        settingsRefreshMs: 200,
        ...tuning,
      },
    });
    await app.listen({ host: '127.0.0.1', port });
    const replica: InProcessReplica = {
      name,
      url: `http://127.0.0.1:${port}`,
      replicaId: config.proxy.replicaId,
      app,
      async close() {
        await app.close();
        redis.disconnect();
        await database.close();
      },
    };
    this.replicas.push(replica);
    return replica;
  }

  /** A replica as a real OS process (apps/proxy/src/main.ts), ready once /readyz answers 200. */
  async startProcess(name: string, extra: Record<string, string> = {}): Promise<ProcessReplica> {
    const port = await freePort();
    const env = this.env(name, port, {
      GATEWAY_LEASE_TTL_MS: String(LEASE_TTL_MS),
      GATEWAY_ALLOW_PRIVATE_HOSTS: 'on',
      GATEWAY_FLUSH_IDLE_MS: '300',
      GATEWAY_ADMISSION_TTL_MS: '2000',
      ...extra,
    });
    const proc = startProcess('apps/proxy/src/main.ts', env);
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 30_000;
    for (;;) {
      const ok = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1_000) })
        .then((r) => r.status === 200)
        .catch(() => false);
      if (ok) break;
      if (proc.child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`proxy ${name} did not start:\n${proc.output()}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const replica: ProcessReplica = {
      name,
      url,
      replicaId: env.GATEWAY_REPLICA_ID!,
      proc,
      close: async () => {
        await proc.stop('SIGTERM');
      },
    };
    this.replicas.push(replica);
    return replica;
  }

  client(replica: Replica, apiKey = ADMIN_KEY): OpenAI {
    return new OpenAI({ apiKey, baseURL: `${replica.url}/v1`, maxRetries: 0, timeout: 30_000 });
  }

  /** Escrow ids (as strings) this replica serves, from its /v1/status. */
  async ownedBy(replica: Replica): Promise<string[]> {
    const res = await fetch(`${replica.url}/v1/status`);
    const body = (await res.json()) as StatusBody;
    return body.runtimes.filter((r) => r.status === 'serving').map((r) => r.escrow_id);
  }

  /** Changes settings as the controller does: the row (revision + 1), then the pub/sub message. */
  async updateSettings(change: {
    modelLimits?: { model_id: string; access_mode: string }[];
    disabled?: { enabled: boolean; message: string; new_url: string | null };
    defaultMaxTokens?: number;
    maxTokensCap?: number;
    passthroughParameters?: string[];
  }): Promise<void> {
    // Plain postgres.js: drizzle's wrapper (db.sql) breaks sql.json; JSON is sent as text and cast.
    const sql = this.storeSql;
    const json = (v: unknown) => (v === undefined ? null : JSON.stringify(v));
    const [row] = await sql<{ revision: string }[]>`
      update settings set
        model_limits = coalesce(${json(change.modelLimits)}::jsonb, model_limits),
        passthrough_parameters = coalesce(${json(change.passthroughParameters)}::jsonb, passthrough_parameters),
        disabled = coalesce(${json(change.disabled)}::jsonb, disabled),
        default_request_max_tokens = coalesce(${change.defaultMaxTokens ?? null}::int, default_request_max_tokens),
        request_max_tokens_cap = coalesce(${change.maxTokensCap ?? null}::int, request_max_tokens_cap),
        revision = revision + 1
      where id = 1 returning revision::text as revision`;
    await this.redis.redis.publish(this.keys.settingsChanges, row!.revision);
  }

  /** Every stored diff of every escrow (the write-ahead log; a 4xx must not add one). */
  /**
   * StartInference txs stored across every session: a request that took a nonce adds one, while the
   * owners' background diffs (idle flushes of Confirm/Finish, validations) add none, so a count taken
   * before and after a refused request stays equal however busy the escrows are.
   */
  async startedInferences(): Promise<number> {
    const heads = await this.storeSql<{ id: string; last: string }[]>`
      select escrow_id::text as id, last_nonce::text as last from session_heads`;
    const store = new PostgresSessionStore(this.storeSql);
    let n = 0;
    for (const h of heads) {
      for (const d of await store.readDiffs(h.id, 1n, BigInt(h.last))) {
        n += d.diff.txs.filter((t) => t.tx.kind === 'startInference').length;
      }
    }
    return n;
  }

  async storedDiffs(escrowId: bigint): Promise<readonly StoredDiff[]> {
    const stored = await new PostgresSessionStore(this.storeSql).load(escrowId.toString());
    return stored?.diffs ?? [];
  }

  async close(): Promise<void> {
    for (const r of this.replicas.splice(0)) await r.close().catch(() => undefined);
    await this.storeSql.end({ timeout: 5 });
    await Promise.allSettled([this.db.drop(), this.redis.cleanup(), this.gateway.close()]);
  }
}

/** Polls `check` until it returns true (setup code, where expect.poll is not available). */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
