// The whole gateway as ./start runs it, for the lifecycle test: a devnet in the test
// process, a fresh migrated database, a Redis prefix, then the controller and two proxy replicas as
// real OS processes, each ready once its health route answers 200.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type ChainClient,
  findEscrowSettledEvents,
  lookupTx,
  queryChainId,
  type TxEvent,
} from '@gonka-gateway/chain';
import {
  type DevAccount,
  type Devnet,
  type DevnetOptions,
  devnetChainClient,
  QWEN_MODEL,
  startDevnet,
} from '@gonka-gateway/devnet';
import { closeRedis, openRedis } from '@gonka-gateway/shared';
import {
  createTestDatabase,
  createTestRedis,
  type TestDatabase,
  type TestRedis,
} from '@gonka-gateway/shared/testing';
import OpenAI from 'openai';
import postgres from 'postgres';
import { freePort, type RunningProcess, startProcess } from '../support/gateway-process.js';

export const ADMIN_KEY = `sk-admin-${'a7'.repeat(24)}`;
export const USER_KEY = `sk-${'7e'.repeat(24)}`;

export interface Stack {
  devnet: Devnet;
  chain: ChainClient;
  chainId: string;
  creator: DevAccount;
  db: TestDatabase;
  /** Plain postgres.js on the stack's database, for checks only. */
  sql: postgres.Sql;
  redis: TestRedis;
  controllerUrl: string;
  /** The proxy replicas' URLs (two unless StackOptions.proxies says otherwise). */
  proxyUrls: [string, string];
  /** The controller process started last (startController replaces it). */
  controller: RunningProcess;
  /**
   * Starts another controller process on the stack's database, Redis prefix and chain (a restart
   * after a kill, or a standby); `port` defaults to the stack's controller port.
   */
  startController(options?: { port?: number; env?: Record<string, string> }): Promise<RunningProcess>;
  /** Every process this test started (stopped by pid in close). */
  processes: RunningProcess[];
  close(): Promise<void>;
}

export interface StackOptions {
  /** Proxy replicas to start (default 2). */
  proxies?: 0 | 1 | 2;
  /** The chain REST URL the controller uses instead of the devnet's (e.g. a tap in front of it). */
  controllerChainRest?: (devnet: Devnet) => Promise<string> | string;
  /** A private redis-server's URL (a test that FLUSHALLs); default the shared test Redis. */
  redisUrl?: string;
  /** Epoch schedule overrides (default: 4 000-block epochs). */
  epoch?: DevnetOptions['epoch'];
  /** Block timer (default 50 ms) and chain param edits of the devnet. */
  devnet?: Pick<DevnetOptions, 'blockIntervalMs' | 'params'>;
  /** Extra variables for every process (e.g. GATEWAY_ROTATION_TICK_MS). */
  env?: Record<string, string>;
}

async function ready(url: string, proc: RunningProcess, what: string): Promise<void> {
  // The proxy answers /readyz, the controller /internal/health.
  const path = what === 'controller' ? '/internal/health' : '/readyz';
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ok = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(2_000) })
      .then((r) => r.status === 200)
      .catch(() => false);
    if (ok) return;
    if (proc.child.exitCode !== null || Date.now() > deadline) {
      throw new Error(`${what} did not start:\n${proc.output()}`);
    }
    await new Promise((r) => setTimeout(r, 150));
  }
}

export async function startStack(options: StackOptions = {}): Promise<Stack> {
  // Epochs of 4 000 blocks at 50 ms keep every escrow inside its settle window for the whole file.
  const devnet = await startDevnet({
    ports: 'ephemeral',
    blockIntervalMs: 50,
    env: {},
    epoch: options.epoch ?? { epochLength: 4_000 },
    ...options.devnet,
  });
  const privateRedis = (url: string): TestRedis => {
    const redis = openRedis(url, { name: 'stack-test' });
    return { url, prefix: 'stack:', redis, cleanup: () => closeRedis(redis) };
  };
  const [db, redis] = await Promise.all([
    createTestDatabase(),
    options.redisUrl ? privateRedis(options.redisUrl) : createTestRedis(),
  ]);
  const sql = postgres(db.url, { max: 2, onnotice: () => {} });
  const chain = devnetChainClient(devnet);
  const chainId = await queryChainId(chain);
  const creator = devnet.accounts.find((a) => a.name === 'creator-0')!;
  const storageDir = await mkdtemp(join(tmpdir(), 'stack-e2e-'));
  const [controllerPort, p1, p2] = [await freePort(), await freePort(), await freePort()];
  const controllerUrl = `http://127.0.0.1:${controllerPort}`;
  const common: Record<string, string> = {
    DEVSHARD_ADMIN_API_KEY: ADMIN_KEY,
    DEVSHARD_API_KEYS: USER_KEY,
    DEVSHARDS_JSON: '[]',
    DEVSHARD_PRIVATE_KEY: creator.key.exportHex(),
    CREATOR_KEY: creator.key.exportHex(),
    DEVSHARD_CHAIN_REST: devnet.urls.chainRest,
    DEVSHARD_PUBLIC_API: devnet.urls.node,
    DEVSHARD_STORAGE_DIR: storageDir,
    DATABASE_URL: db.url,
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: redis.prefix,
    GATEWAY_LISTEN_HOST: '127.0.0.1',
    GATEWAY_CONTROLLER_PORT: String(controllerPort),
    GATEWAY_CONTROLLER_URL: controllerUrl,
    GATEWAY_LEASE_TTL_MS: '1500',
    GATEWAY_ALLOW_PRIVATE_HOSTS: 'on',
    GATEWAY_FLUSH_IDLE_MS: '300',
    GATEWAY_ADMISSION_TTL_MS: '2000',
    LOG_LEVEL: 'warn',
    ...options.env,
  };
  const processes: RunningProcess[] = [];
  const close = async () => {
    for (const p of processes.splice(0).reverse()) await p.stop('SIGTERM').catch(() => undefined);
    await sql.end({ timeout: 5 });
    await rm(storageDir, { recursive: true, force: true });
    await Promise.allSettled([db.drop(), redis.cleanup(), devnet.close()]);
  };
  const controllerChainRest = options.controllerChainRest
    ? await options.controllerChainRest(devnet)
    : devnet.urls.chainRest;
  const startController: Stack['startController'] = async (start = {}) => {
    const port = start.port ?? controllerPort;
    const proc = startProcess('apps/controller/src/main.ts', {
      ...common,
      DEVSHARD_CHAIN_REST: controllerChainRest,
      GATEWAY_CONTROLLER_PORT: String(port),
      DEVSHARD_PORT: String(p1),
      ...start.env,
    });
    processes.push(proc);
    await ready(`http://127.0.0.1:${port}`, proc, 'controller');
    return proc;
  };
  try {
    const controller = await startController();
    const proxyUrls: [string, string] = [`http://127.0.0.1:${p1}`, `http://127.0.0.1:${p2}`];
    const proxies = [p1, p2].slice(0, options.proxies ?? 2).map((port, i) =>
      startProcess('apps/proxy/src/main.ts', {
        ...common,
        DEVSHARD_PORT: String(port),
        GATEWAY_PROXY_INTERNAL_URL: `http://127.0.0.1:${port}`,
        GATEWAY_REPLICA_ID: `stack-${i}`,
      }),
    );
    processes.push(...proxies);
    await Promise.all(proxies.map((p, i) => ready(proxyUrls[i]!, p, `proxy ${i}`)));
    const stack: Stack = {
      devnet,
      chain,
      chainId,
      creator,
      db,
      sql,
      redis,
      controllerUrl,
      proxyUrls,
      controller,
      startController: async (start) => {
        const proc = await startController(start);
        stack.controller = proc;
        return proc;
      },
      processes,
      close,
    };
    return stack;
  } catch (err) {
    await close();
    throw err;
  }
}

/** Events of an included tx (none for anything else). */
async function includedEvents(chain: ChainClient, txHash: string): Promise<TxEvent[]> {
  const found = await lookupTx(chain, txHash);
  return found.kind === 'found' && found.outcome.status === 'included' ? found.outcome.events : [];
}

/** The gas fee an included tx paid, in ngonka (from its `fee` event attribute). */
export async function txFee(chain: ChainClient, txHash: string): Promise<bigint> {
  const fee =
    (await includedEvents(chain, txHash)).flatMap((e) => e.attributes).find((x) => x.key === 'fee')?.value ??
    '0ngonka';
  return BigInt(fee.replace(/ngonka$/, '') || '0');
}

/** The devshard_escrow_settled event of an included settle tx. */
export async function settledEvent(chain: ChainClient, txHash: string) {
  const [settled] = findEscrowSettledEvents(await includedEvents(chain, txHash));
  if (!settled) throw new Error(`tx ${txHash} settled no escrow`);
  return settled;
}

export interface AdminAnswer {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
  json: any;
}

/** One admin API call with the stack's admin key to `base` (a proxy or the controller). */
export async function adminCall(
  base: string,
  method: string,
  path: string,
  body?: object,
  headers: Record<string, string> = {},
): Promise<AdminAnswer> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN_KEY}`,
      ...(body ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(90_000),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
}

/** What chat traffic through the stack served and which requests failed (chatThrough). */
export interface ChatTally {
  served: number;
  readonly failures: string[];
}

/**
 * Sequential chat requests through one proxy, non-streamed and streamed in turn, while `running()`
 * holds; an empty answer counts as a failure, and every failure is kept with the chain height.
 */
export async function chatThrough(
  s: Pick<Stack, 'devnet'>,
  url: string,
  o: { tag: string; maxTokens: number; pauseMs: number; timeoutMs: number; running: () => boolean },
  tally: ChatTally,
): Promise<void> {
  const client = new OpenAI({ apiKey: USER_KEY, baseURL: `${url}/v1`, maxRetries: 0, timeout: o.timeoutMs });
  const request = { model: QWEN_MODEL, max_tokens: o.maxTokens };
  let i = 0;
  while (o.running()) {
    try {
      const messages = [{ role: 'user' as const, content: `${o.tag}-${i}` }];
      if (i++ % 2 === 1) {
        let text = '';
        const chunks = await client.chat.completions.create({ ...request, messages, stream: true });
        for await (const c of chunks) text += c.choices[0]?.delta?.content ?? '';
        if (text.length === 0) throw new Error('empty stream');
      } else {
        const res = await client.chat.completions.create({ ...request, messages });
        if (!res.choices[0]?.message.content) throw new Error('empty answer');
      }
      tally.served++;
    } catch (err) {
      tally.failures.push(`${url} #${i} at height ${s.devnet.blocks.height}: ${(err as Error).message}`);
    }
    await new Promise((r) => setTimeout(r, o.pauseMs));
  }
}
