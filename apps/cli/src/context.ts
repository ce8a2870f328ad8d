// Endpoint and key resolution shared by every command: a flag wins, then the variables the gateway
// itself reads (gateway-spec.md §2.10: DEVSHARD_CHAIN_REST, DEVSHARD_TX_QUERY_REST,
// DEVSHARD_PUBLIC_API, DEVSHARD_TX_GAS_LIMIT), then the operator-side ones (NODE_RPC, CHAIN_ID,
// NODE_CHAIN_API, NODE_BASE), then the devnet defaults.
import {
  type ChainClient,
  createChainClient,
  DEFAULT_GAS_PRICE_FLOOR,
  DEFAULT_PRIVATE_KEY_ENV,
  DEFAULT_TX_GAS_LIMIT,
  type PrivateKey,
  privateKeyFromEnv,
  privateKeyFromFile,
} from '@gonka-gateway/chain';
import { type Command, Option } from 'commander';
import { type CliIo, UsageError } from './cli-io.js';

export const DEVNET_DEFAULTS = {
  chainRest: 'http://127.0.0.1:1317',
  chainRpc: 'http://127.0.0.1:26657',
  publicApi: 'http://127.0.0.1:9000',
} as const;

export interface GlobalOptions {
  json?: boolean;
  chainRest?: string;
  txQueryRest?: string;
  chainRpc?: string;
  publicApi?: string;
  chainId?: string;
  timeoutMs?: string;
}

export interface KeyOptions {
  privateKeyEnv?: string;
  privateKeyFile?: string;
}

const nonEmpty = (...values: Array<string | undefined>) =>
  values.find((v) => v !== undefined && v.trim() !== '');

export function addGlobalOptions(program: Command): void {
  program
    .option('--json', 'machine-readable JSON output')
    .option(
      '--chain-rest <url>',
      `chain REST base [env DEVSHARD_CHAIN_REST, NODE_CHAIN_API; default ${DEVNET_DEFAULTS.chainRest}]`,
    )
    .option(
      '--tx-query-rest <url>',
      'REST base for tx lookups [env DEVSHARD_TX_QUERY_REST; default: chain REST]',
    )
    .option('--chain-rpc <url>', `CometBFT RPC base [env NODE_RPC; default ${DEVNET_DEFAULTS.chainRpc}]`)
    .option(
      '--public-api <url>',
      `public node base [env DEVSHARD_PUBLIC_API, NODE_BASE; default ${DEVNET_DEFAULTS.publicApi}]`,
    )
    .option('--chain-id <id>', 'chain id [env CHAIN_ID; default: read from the node]')
    .option('--timeout-ms <ms>', 'per-request HTTP timeout', '10000');
}

export function chainClient(opts: GlobalOptions, io: CliIo): ChainClient {
  const env = io.env;
  const timeoutMs = Number(opts.timeoutMs ?? '10000');
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0)
    throw new UsageError('--timeout-ms must be a positive integer');
  const chainRest =
    nonEmpty(opts.chainRest, env.DEVSHARD_CHAIN_REST, env.NODE_CHAIN_API) ?? DEVNET_DEFAULTS.chainRest;
  return createChainClient({
    chainRest,
    txQueryRest: nonEmpty(opts.txQueryRest, env.DEVSHARD_TX_QUERY_REST) ?? chainRest,
    chainRpc: nonEmpty(opts.chainRpc, env.NODE_RPC) ?? DEVNET_DEFAULTS.chainRpc,
    publicApi: nonEmpty(opts.publicApi, env.DEVSHARD_PUBLIC_API, env.NODE_BASE) ?? DEVNET_DEFAULTS.publicApi,
    fetch: io.fetch,
    timeoutMs,
  });
}

export function configuredChainId(opts: GlobalOptions, io: CliIo): string | undefined {
  return nonEmpty(opts.chainId, io.env.CHAIN_ID);
}

export function addKeyOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--private-key-env <name>',
        'name of the environment variable holding the hex private key',
      ).default(DEFAULT_PRIVATE_KEY_ENV),
    )
    .option(
      '--private-key-file <path>',
      'file holding the hex key, or an env file with a DEVSHARD_PRIVATE_KEY= line',
    );
}

export async function loadKey(opts: KeyOptions, io: CliIo, command: Command): Promise<PrivateKey> {
  const envExplicit = command.getOptionValueSource('privateKeyEnv') === 'cli';
  if (opts.privateKeyFile !== undefined) {
    if (envExplicit) throw new UsageError('use either --private-key-env or --private-key-file, not both');
    return privateKeyFromFile(opts.privateKeyFile, {
      onInsecurePermissions: (mode) =>
        io.stderr.write(
          `warning: ${opts.privateKeyFile} is readable by other users (mode ${mode.toString(8)}); chmod 600 it\n`,
        ),
    });
  }
  return privateKeyFromEnv(io.env, opts.privateKeyEnv ?? DEFAULT_PRIVATE_KEY_ENV);
}

/** `--gas-limit` > DEVSHARD_TX_GAS_LIMIT > 700000; `--gas-price-floor` > 10. */
export function gasSettings(
  opts: { gasLimit?: string; gasPriceFloor?: string },
  io: CliIo,
): { gasLimit: bigint; gasPriceFloor: bigint } {
  const gasLimit = parsePositive(
    nonEmpty(opts.gasLimit, io.env.DEVSHARD_TX_GAS_LIMIT) ?? DEFAULT_TX_GAS_LIMIT.toString(),
    'gas limit',
  );
  const floor = opts.gasPriceFloor ?? DEFAULT_GAS_PRICE_FLOOR.toString();
  if (!/^[0-9]+$/.test(floor))
    throw new UsageError('--gas-price-floor must be a non-negative integer (ngonka per gas)');
  return { gasLimit, gasPriceFloor: BigInt(floor) };
}

export function parsePositive(value: string, what: string): bigint {
  if (!/^[0-9]+$/.test(value.trim()) || BigInt(value.trim()) <= 0n)
    throw new UsageError(`${what} must be a positive integer`);
  return BigInt(value.trim());
}

export function parseMs(value: string | undefined, fallback: number, what: string): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0)
    throw new UsageError(`${what} must be a positive integer (milliseconds)`);
  return n;
}
