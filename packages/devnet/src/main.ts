// `pnpm devnet`: runs a devnet on the default ports until SIGINT/SIGTERM and prints its endpoints,
// chain id and dev accounts with their well-known (public!) private keys, like a local dev chain.
// Environment: DEVNET_BLOCK_INTERVAL_MS (default 1000), DEVNET_EPOCH_LENGTH (blocks, default 200),
// DEVNET_EXECUTION_TIMEOUT (seconds, default 1920), DEVNET_MAX_NONCE (default 1,000,000; both
// env-options.ts), DEVNET_HOST (default 127.0.0.1),
// DEVSHARD_PRIVATE_KEY (funded and allowlisted when set).
import { startDevnet } from './devnet.js';
import { devnetOptionsFromEnv } from './env-options.js';
import { GNK } from './genesis.js';

const fromEnv = devnetOptionsFromEnv(process.env);
const blockIntervalMs = fromEnv.blockIntervalMs ?? 1000;
const devnet = await startDevnet({ ...fromEnv, host: process.env.DEVNET_HOST ?? '127.0.0.1' });

const gnk = (n: bigint) => `${n / GNK}.${(n % GNK).toString().padStart(9, '0')} GNK`;
const lines = [
  `gonka devnet running — chain id ${devnet.chainId}, blocks every ${blockIntervalMs} ms, epochs of ${devnet.chain.params().epoch.epochLength} blocks, execution_timeout ${devnet.chain.params().devshardEscrow.executionTimeout} s, max_nonce ${devnet.chain.params().devshardEscrow.maxNonce}`,
  `  chain REST   ${devnet.urls.chainRest}`,
  `  chain RPC    ${devnet.urls.chainRpc}`,
  `  public node  ${devnet.urls.node}   (chain REST at /chain-api, RPC at /chain-rpc, admin at /devnet/admin)`,
  `  mock model   ${devnet.urls.mlNode}/v1/chat/completions (unsigned)`,
  '',
  'hosts:',
  ...devnet.participants.map(
    (p) => `  ${p.name}  ${p.address}  weight ${p.weight}  ${p.inferenceUrl}  [${p.models.join(', ')}]`,
  ),
  '',
  'dev accounts (public test keys — never fund them on a real network):',
  ...devnet.accounts.map(
    (a) =>
      // Only the derived dev keys are printed; a DEVSHARD_PRIVATE_KEY account's key is a real secret.
      `  ${a.name.padEnd(15)} ${a.address}  ${a.name.startsWith('extra-') ? '(key from DEVSHARD_PRIVATE_KEY, not shown)'.padEnd(64) : a.key.exportHex()}  ${gnk(a.genesisBalance)}${a.allowlisted ? '  allowlisted' : ''}${a.pubkeyPublished ? '' : '  (pubkey not published)'}`,
  ),
];
process.stdout.write(`${lines.join('\n')}\n`);

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  process.stdout.write(`\n${signal}: stopping devnet\n`);
  await devnet.close();
  process.exit(0);
};
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
