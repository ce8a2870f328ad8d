// Shared setup of the chain-devnet tests: a devnet per test file on ephemeral ports, a
// ChainClient and an in-process gwctl pointed at it, short poll settings, temporary body files.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PrivateKey } from '@gonka-gateway/chain';
import { runCli } from '@gonka-gateway/cli';
import {
  type DevAccount,
  type Devnet,
  type DevnetOptions,
  devnetChainClient,
  startDevnet,
} from '@gonka-gateway/devnet';

/** Blocks every 50 ms keep block time close to the wall clock (tx timeouts, X-Timestamp). */
export function startChainDevnet(options: DevnetOptions = {}): Promise<Devnet> {
  return startDevnet({ ports: 'ephemeral', blockIntervalMs: 50, env: {}, ...options });
}

export function account(devnet: Devnet, name: string): DevAccount {
  const found = devnet.accounts.find((a) => a.name === name);
  if (!found) throw new Error(`no dev account ${name}`);
  return found;
}

export function participant(devnet: Devnet, name: string) {
  const found = devnet.participants.find((p) => p.name === name);
  if (!found) throw new Error(`no participant ${name}`);
  return found;
}

/** A ChainClient on the devnet (10 s timeout unless given). */
export const clientFor = devnetChainClient;

/** Waits that end as soon as the tx is indexed; the timeout only bounds a broken run. */
export const UNTIL_INCLUDED = { intervalMs: 20, timeoutMs: 15_000 } as const;
/** Waits that are expected to run out (the tx is never indexed): kept short. */
export const UNTIL_GIVING_UP = { intervalMs: 20, timeoutMs: 600 } as const;

export const cliWait = (w: { intervalMs: number; timeoutMs: number }) => [
  '--poll-interval-ms',
  String(w.intervalMs),
  '--wait-timeout-ms',
  String(w.timeoutMs),
];

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface GwctlOptions {
  /** Key put into DEVSHARD_PRIVATE_KEY. */
  key?: PrivateKey;
  env?: Record<string, string>;
  nowNs?: () => bigint;
  random?: () => number;
  /** Sees each stdout chunk as it is written (ordering checks). */
  onStdout?: (chunk: string) => void;
}

/** gwctl in-process against the devnet: endpoints through the variables the gateway itself reads. */
export async function gwctl(devnet: Devnet, argv: string[], options: GwctlOptions = {}): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const env: Record<string, string> = {
    DEVSHARD_CHAIN_REST: devnet.urls.chainRest,
    NODE_RPC: devnet.urls.chainRpc,
    DEVSHARD_PUBLIC_API: devnet.urls.node,
    ...(options.key ? { DEVSHARD_PRIVATE_KEY: options.key.exportHex() } : {}),
    ...options.env,
  };
  const code = await runCli(argv, {
    env,
    stdout: {
      write: (s: string) => {
        options.onStdout?.(s);
        stdout += s;
      },
    },
    stderr: { write: (s: string) => (stderr += s) },
    ...(options.nowNs ? { nowNs: options.nowNs } : {}),
    ...(options.random ? { random: options.random } : {}),
  });
  return { code, stdout, stderr };
}

/** The one `gwctl: …` error line of a failed run. */
export function errorLine(run: CliRun): string {
  const lines = run.stderr.split('\n').filter((l) => l.startsWith('gwctl: '));
  if (lines.length !== 1) throw new Error(`expected one error line, got stderr:\n${run.stderr}`);
  return lines[0]!;
}

/** A temporary directory for body files, removed by `cleanup()`. */
export async function scratchDir(): Promise<{
  file(name: string, text: string): Promise<string>;
  cleanup(): Promise<void>;
}> {
  const dir = await mkdtemp(join(tmpdir(), 'chain-devnet-'));
  return {
    async file(name, text) {
      const path = join(dir, name);
      await writeFile(path, text);
      return path;
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

export const wallClockNs = () => BigInt(Date.now()) * 1_000_000n;
