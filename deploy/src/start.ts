// `./start` / `pnpm start`: the whole gateway on a local devnet, with working defaults.
// 1. secrets for the demo from .gateway-data/dev.env (generated once, mode 0600);
// 2. the devnet on its default ports, funding and allowlisting the creator key;
// 3. the controller (creates and migrates the database), then two proxy replicas, as their own
//    processes, behind HAProxy on the spec's {gateway_url} 127.0.0.1:18080 (load-balancer.ts); one
//    replica on that port instead when haproxy is missing and cannot be installed;
// 4. the demo escrows for the default model through the admin API (demo-escrow.ts), one per proxy
//    replica so each serves the model itself and nothing is forwarded between them in steady state
//    (architecture §2.4), and snippets to try it (chat-snippets.ts: curl, curl streamed, Python and
//    Node `openai`);
// 5. a process that dies is logged and restarted after a moment (restart-policy.ts);
// 6. Ctrl-C (or SIGTERM) drains and stops all of it, haproxy included.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createChainClient, PrivateKey } from '@gonka-gateway/chain';
import { devnetOptionsFromEnv, GNK, QWEN_MODEL, startDevnet } from '@gonka-gateway/devnet';
import { chatSnippets, formatChatSnippets } from './chat-snippets.js';
import { ensureConsoleBuilt } from './console-build.js';
import { type DemoEscrows, ensureDemoEscrows } from './demo-escrow.js';
import { loadOrCreateDevEnv } from './dev-env.js';
import {
  clearRedisPrefix,
  DEVNET_DATABASE,
  DEVNET_REDIS_PREFIX,
  dropDevnetDatabase,
} from './devnet-state.js';
import { ensureHaproxy, haproxyConfig, type LoadBalancer, startHaproxy } from './load-balancer.js';
import { takenPort } from './port-check.js';
import { decideRestart } from './restart-policy.js';
import { REPO_ROOT, startTsProcess, type TsProcess, waitForHttp } from './ts-process.js';

const env = process.env;
const dataDir = env.START_DATA_DIR ?? join(REPO_ROOT, '.gateway-data');
const devEnvPath = join(dataDir, 'dev.env');
const secrets = loadOrCreateDevEnv(devEnvPath);
const gatewayPort = env.START_GATEWAY_PORT ?? '18080';
// The replicas' own ports: DEVSHARD_PORT for the first, START_SECOND_PROXY_PORT for the second.
const replicaPorts = [env.DEVSHARD_PORT ?? '8080', env.START_SECOND_PROXY_PORT ?? '8082'];
const controllerPort = env.GATEWAY_CONTROLLER_PORT ?? '8081';
const modelId = env.START_MODEL ?? QWEN_MODEL;
const escrowAmount = BigInt(env.START_ESCROW_AMOUNT ?? String(10n * GNK));
const verbose = env.START_VERBOSE === '1';

const say = (line: string) => process.stdout.write(`${line}\n`);
const prefixed = (name: string) => (chunk: string) => {
  // While stopping, the children's warnings about closed connections are expected noise.
  const shown = stopping ? /"level":(50|60)/ : /"level":(40|50|60)|error/i;
  if (!verbose && !shown.test(chunk)) return;
  for (const line of chunk.split('\n')) if (line.trim()) process.stdout.write(`[${name}] ${line}\n`);
};

const taken = await takenPort([
  { port: gatewayPort, variable: 'START_GATEWAY_PORT' },
  { port: replicaPorts[0]!, variable: 'DEVSHARD_PORT' },
  { port: replicaPorts[1]!, variable: 'START_SECOND_PROXY_PORT' },
  { port: controllerPort, variable: 'GATEWAY_CONTROLLER_PORT' },
]);
if (taken) {
  say(taken);
  process.exit(1);
}

say('starting the devnet…');
const devnet = await startDevnet({
  // DEVNET_PORTS=ephemeral lets tests (and a second demo) run beside the default ports.
  ports: env.DEVNET_PORTS === 'ephemeral' ? 'ephemeral' : 'default',
  // DEVNET_BLOCK_INTERVAL_MS, DEVNET_EPOCH_LENGTH, DEVNET_EXECUTION_TIMEOUT, DEVNET_MAX_NONCE
  // (devnet env-options.ts).
  ...devnetOptionsFromEnv(env),
  env: { DEVSHARD_PRIVATE_KEY: secrets.DEVSHARD_PRIVATE_KEY! },
});

// Without an operator's choice, the database and Redis prefix are the devnet's own, emptied here.
const databaseUrl = env.DATABASE_URL ?? `postgres://postgres@127.0.0.1:5432/${DEVNET_DATABASE}`;
const redisPrefix = env.REDIS_KEY_PREFIX ?? DEVNET_REDIS_PREFIX;
if (!env.DATABASE_URL) await dropDevnetDatabase(databaseUrl);
if (!env.REDIS_KEY_PREFIX) await clearRedisPrefix(env.REDIS_URL ?? 'redis://127.0.0.1:6379', redisPrefix);

const gatewayEnv: Record<string, string> = {
  ...Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined)),
  ...secrets,
  DATABASE_URL: databaseUrl,
  REDIS_KEY_PREFIX: redisPrefix,
  DEVSHARDS_JSON: env.DEVSHARDS_JSON ?? (env.DEVSHARD_ESCROW_ID ? '' : '[]'),
  DEVSHARD_CHAIN_REST: env.DEVSHARD_CHAIN_REST ?? devnet.urls.chainRest,
  DEVSHARD_TX_QUERY_REST: env.DEVSHARD_TX_QUERY_REST ?? devnet.urls.chainRest,
  DEVSHARD_PUBLIC_API: env.DEVSHARD_PUBLIC_API ?? devnet.urls.node,
  DEVSHARD_STORAGE_DIR: env.DEVSHARD_STORAGE_DIR ?? join(dataDir, 'storage'),
  GATEWAY_CONTROLLER_PORT: controllerPort,
  // The devnet's hosts listen on loopback, which the proxy refuses by default.
  GATEWAY_ALLOW_PRIVATE_HOSTS: env.GATEWAY_ALLOW_PRIVATE_HOSTS ?? 'on',
};

let balancer: LoadBalancer | undefined;
let stopping = false;
async function stopAll(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    say('\nstopping: load balancer, proxies, controller, devnet…');
    await balancer?.stop();
    // Replicas drain in parallel (each hands its escrows back); the controller goes last.
    const [controller, ...proxies] = supervised;
    await Promise.all(proxies.map((p) => p.current().stop('SIGTERM')));
    await controller?.current().stop('SIGTERM');
    await devnet.close();
  }
  process.exit(code);
}
process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));

/**
 * Runs one gateway process and, when it dies while ./start runs, logs it and starts it again after
 * a moment (restart-policy.ts); meanwhile haproxy sends requests to the other replica. A crash loop
 * or a configuration error stops everything instead. `current()` is the live process.
 */
interface Supervised {
  name: string;
  current(): TsProcess;
}
const supervised: Supervised[] = [];

function startChild(name: string, entry: string, extraEnv: Record<string, string> = {}): Supervised {
  const exits: number[] = [];
  let proc: TsProcess;
  const launch = () => {
    proc = startTsProcess(entry, { ...gatewayEnv, ...extraEnv }, { onOutput: prefixed(name) });
    const mine = proc;
    void mine.exited.then((code) => {
      if (stopping) return;
      const decision = decideRestart(code, exits, Date.now());
      const tail = mine.output().split('\n').slice(-15).join('\n');
      if (decision.action === 'give_up') {
        say(`the ${name} exited (${code}) and is not restarted: ${decision.reason}:\n${tail}`);
        void stopAll(1);
        return;
      }
      say(`the ${name} exited (${code}); restarting it in ${decision.delayMs / 1000} s`);
      setTimeout(() => {
        if (stopping) return;
        launch();
        say(`the ${name} restarted (pid ${proc.child.pid})`);
      }, decision.delayMs);
    });
  };
  launch();
  const handle = { name, current: () => proc };
  supervised.push(handle);
  return handle;
}

function startReplica(i: number, port: string): { proxy: Supervised; port: string } {
  const proxy = startChild(`proxy ${i + 1}`, 'apps/proxy/src/main.ts', {
    DEVSHARD_PORT: port,
    GATEWAY_REPLICA_ID: `start-${i + 1}`,
    GATEWAY_PROXY_INTERNAL_URL: `http://127.0.0.1:${port}`,
  });
  return { proxy, port };
}

const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
let replicas: { proxy: Supervised; port: string }[] = [];
let demo: DemoEscrows = { escrows: [], spread: false };
try {
  // The controller serves /console from apps/console/dist; a clean clone has none yet.
  ensureConsoleBuilt();
  say('starting the controller…');
  const controller = startChild('controller', 'apps/controller/src/main.ts', {
    DEVSHARD_PORT: replicaPorts[0]!,
  });
  await waitForHttp(`http://127.0.0.1:${controllerPort}/internal/health`, controller.current());
  const haproxy = env.START_LOAD_BALANCER === 'none' ? undefined : ensureHaproxy(say);
  if (haproxy) {
    say('starting two proxy replicas…');
    replicas = replicaPorts.map((port, i) => startReplica(i, port));
  } else {
    say(`haproxy is not installed and cannot be installed here: one proxy replica serves ${gatewayUrl}`);
    replicas = [startReplica(0, gatewayPort)];
  }
  await Promise.all(replicas.map((r) => waitForHttp(`http://127.0.0.1:${r.port}/readyz`, r.proxy.current())));
  if (haproxy) {
    say(`starting haproxy on ${gatewayUrl}…`);
    mkdirSync(dataDir, { recursive: true });
    const config = haproxyConfig({
      header: 'Generated by ./start (deploy/src/load-balancer.ts); rewritten at every start.',
      bind: `127.0.0.1:${gatewayPort}`,
      servers: replicas.map((r, i) => ({ name: `proxy${i + 1}`, address: `127.0.0.1:${r.port}` })),
    });
    const lb = startHaproxy(haproxy, join(dataDir, 'haproxy.cfg'), config);
    balancer = lb;
    void lb.exited.then((code) => {
      if (stopping) return;
      say(`haproxy exited (${code}) (START_GATEWAY_PORT moves its port):\n${lb.output()}`);
      void stopAll(1);
    });
    await waitForHttp(`${gatewayUrl}/readyz`, { child: lb.child, output: lb.output } as TsProcess);
  }
  demo = await ensureDemoEscrows(
    {
      gatewayUrl,
      adminKey: secrets.DEVSHARD_ADMIN_API_KEY!,
      chainId: devnet.chainId,
      chain: createChainClient({
        chainRest: gatewayEnv.DEVSHARD_CHAIN_REST!,
        chainRpc: devnet.urls.chainRpc,
        publicApi: gatewayEnv.DEVSHARD_PUBLIC_API!,
        timeoutMs: 10_000,
      }),
      creator: PrivateKey.fromHex(secrets.DEVSHARD_PRIVATE_KEY!).address,
      modelId,
      amount: escrowAmount,
      replicaUrls: replicas.map((r) => `http://127.0.0.1:${r.port}`),
      userKey: secrets.DEVSHARD_API_KEYS!.split(',')[0]!.trim(),
      say,
    },
    replicas.length,
  );
} catch (err) {
  say(`start failed: ${err instanceof Error ? err.message : String(err)}`);
  await stopAll(1);
}

const creator = PrivateKey.fromHex(secrets.DEVSHARD_PRIVATE_KEY!).address;
const userKey = secrets.DEVSHARD_API_KEYS!.split(',')[0]!.trim();
const replicaLine = replicas.map((r) => `:${r.port}`).join(' and ');
const demoIds = demo.escrows.map((e) => e.escrowId).join(', ');
const escrowLine =
  replicas.length === 1
    ? `${demoIds} (${modelId})`
    : `${demoIds} (${modelId}), ${demo.spread ? 'one per replica: requests are served where they land' : 'not yet one per replica: some requests are forwarded to the owner'}`;
say(`
gateway ready on the devnet (chain id ${devnet.chainId})
  gateway           ${gatewayUrl}   ${balancer ? `haproxy → proxy replicas on ${replicaLine}` : 'one proxy replica (no load balancer)'}
  demo escrows      ${escrowLine}
  controller        http://127.0.0.1:${controllerPort}    metrics: GET /metrics on every process
  API reference     http://127.0.0.1:${controllerPort}/docs (OpenAPI document: /openapi.json)
  operator console  ${gatewayUrl}/console (log in with DEVSHARD_ADMIN_API_KEY; also served by the controller)
  devnet            chain REST ${devnet.urls.chainRest}, RPC ${devnet.urls.chainRpc}, node ${devnet.urls.node}
  hosts             ${devnet.participants.map((p) => p.inferenceUrl).join(', ')}
  creator address   ${creator} (funded and allowlisted on the devnet)
  API keys          in ${devEnvPath} (DEVSHARD_API_KEYS, DEVSHARD_ADMIN_API_KEY)

${formatChatSnippets(chatSnippets({ gatewayUrl, userKey, modelId }))}

also:  curl -s ${gatewayUrl}/v1/status
       pnpm gwctl balance ${creator}
       set -a; . ${devEnvPath}; set +a; pnpm gwctl admin devshards   (README "Quick start")
Ctrl-C stops everything. START_VERBOSE=1 shows every log line.`);
