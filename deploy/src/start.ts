// `./start` / `pnpm start`: the whole gateway on a local devnet, with working defaults.
// 1. secrets for the demo from .gateway-data/dev.env (generated once, mode 0600);
// 2. the devnet on its default ports, funding and allowlisting the creator key;
// 3. the controller (creates and migrates the database), then the proxy, as their own processes;
// 4. Ctrl-C (or SIGTERM) drains and stops all of it.
import { join } from 'node:path';
import { PrivateKey } from '@gonka-gateway/chain';
import { startDevnet } from '@gonka-gateway/devnet';
import { loadOrCreateDevEnv } from './dev-env.js';
import { REPO_ROOT, startTsProcess, type TsProcess, waitForHttp } from './ts-process.js';

const env = process.env;
const devEnvPath = join(REPO_ROOT, '.gateway-data', 'dev.env');
const secrets = loadOrCreateDevEnv(devEnvPath);
const proxyPort = env.DEVSHARD_PORT ?? '8080';
const controllerPort = env.GATEWAY_CONTROLLER_PORT ?? '8081';
const verbose = env.START_VERBOSE === '1';

const say = (line: string) => process.stdout.write(`${line}\n`);
const prefixed = (name: string) => (chunk: string) => {
  if (!verbose && !/"level":(40|50|60)/.test(chunk) && !/error/i.test(chunk)) return;
  for (const line of chunk.split('\n')) if (line.trim()) process.stdout.write(`[${name}] ${line}\n`);
};

say('starting the devnet…');
const devnet = await startDevnet({
  // DEVNET_PORTS=ephemeral lets tests (and a second demo) run beside the default ports.
  ports: env.DEVNET_PORTS === 'ephemeral' ? 'ephemeral' : 'default',
  blockIntervalMs: Number(env.DEVNET_BLOCK_INTERVAL_MS ?? 1000),
  env: { DEVSHARD_PRIVATE_KEY: secrets.DEVSHARD_PRIVATE_KEY! },
});

const gatewayEnv: Record<string, string> = {
  ...Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined)),
  ...secrets,
  DEVSHARDS_JSON: env.DEVSHARDS_JSON ?? (env.DEVSHARD_ESCROW_ID ? '' : '[]'),
  DEVSHARD_CHAIN_REST: env.DEVSHARD_CHAIN_REST ?? devnet.urls.chainRest,
  DEVSHARD_TX_QUERY_REST: env.DEVSHARD_TX_QUERY_REST ?? devnet.urls.chainRest,
  DEVSHARD_PUBLIC_API: env.DEVSHARD_PUBLIC_API ?? devnet.urls.node,
  DEVSHARD_STORAGE_DIR: env.DEVSHARD_STORAGE_DIR ?? join(REPO_ROOT, '.gateway-data', 'storage'),
  DEVSHARD_PORT: proxyPort,
  GATEWAY_CONTROLLER_PORT: controllerPort,
  // The devnet's hosts listen on loopback, which the proxy refuses by default (issue 11 §9).
  GATEWAY_ALLOW_PRIVATE_HOSTS: env.GATEWAY_ALLOW_PRIVATE_HOSTS ?? 'on',
};

const children: TsProcess[] = [];
let stopping = false;
async function stopAll(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    say('\nstopping: proxy, controller, devnet…');
    for (const child of [...children].reverse()) await child.stop('SIGTERM');
    await devnet.close();
  }
  process.exit(code);
}
process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));

async function startChild(name: string, entry: string, readyUrl: string): Promise<TsProcess> {
  say(`starting the ${name}…`);
  const child = startTsProcess(entry, gatewayEnv, { onOutput: prefixed(name) });
  children.push(child);
  void child.exited.then((code) => {
    if (stopping) return;
    say(`the ${name} exited (${code}):\n${child.output().split('\n').slice(-15).join('\n')}`);
    void stopAll(1);
  });
  await waitForHttp(readyUrl, child);
  return child;
}

try {
  await startChild(
    'controller',
    'apps/controller/src/main.ts',
    `http://127.0.0.1:${controllerPort}/internal/health`,
  );
  await startChild('proxy', 'apps/proxy/src/main.ts', `http://127.0.0.1:${proxyPort}/v1/status`);
} catch (err) {
  say(`start failed: ${err instanceof Error ? err.message : String(err)}`);
  await stopAll(1);
}

const creator = PrivateKey.fromHex(secrets.DEVSHARD_PRIVATE_KEY!).address;
say(`
gateway ready on the devnet (chain id ${devnet.chainId})
  gateway (proxy)   http://127.0.0.1:${proxyPort}      status: GET /v1/status
  controller        http://127.0.0.1:${controllerPort}      metrics: GET /metrics on both
  devnet            chain REST ${devnet.urls.chainRest}, RPC ${devnet.urls.chainRpc}, node ${devnet.urls.node}
  hosts             ${devnet.participants.map((p) => p.inferenceUrl).join(', ')}
  creator address   ${creator} (funded and allowlisted on the devnet)
  API keys          in ${devEnvPath} (DEVSHARD_API_KEYS, DEVSHARD_ADMIN_API_KEY)

try:  curl -s http://127.0.0.1:${proxyPort}/v1/status
      pnpm gwctl balance ${creator}
      pnpm gwctl params
Ctrl-C stops everything. START_VERBOSE=1 shows every log line.`);
