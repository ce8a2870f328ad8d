// The devnet knobs `pnpm devnet` (main.ts) and `./start` (deploy/src/start.ts) read from the
// environment, so a scenario on a fast schedule (e.g. 250 ms blocks, 200-block epochs and a short
// execution timeout for settle-window runs) is one command line:
// - DEVNET_BLOCK_INTERVAL_MS: block timer (default 1000);
// - DEVNET_EPOCH_LENGTH: epoch_params.epoch_length in blocks (default 200; PoC takes the 20 blocks
//   before set_new_validators, so at least 21);
// - DEVNET_EXECUTION_TIMEOUT: devshard_escrow_params.execution_timeout in seconds (default 1920),
//   frozen onto every escrow created after start;
// - DEVNET_MAX_NONCE: devshard_escrow_params.max_nonce (default 1,000,000, mainnet's), likewise frozen
//   onto every escrow created after start; a low one (e.g. 25,000) exercises the gateway's routing
//   stop and escrow replacement at the chain's ceiling (devshard-protocol.md §7.5).
import type { DevnetOptions } from './options.js';

type Env = Readonly<Record<string, string | undefined>>;

export function devnetOptionsFromEnv(env: Env): Pick<DevnetOptions, 'blockIntervalMs' | 'epoch' | 'params'> {
  const blockIntervalMs = whole(env, 'DEVNET_BLOCK_INTERVAL_MS', 0) ?? 1000;
  const epochLength = whole(env, 'DEVNET_EPOCH_LENGTH', 21);
  const executionTimeout = whole(env, 'DEVNET_EXECUTION_TIMEOUT', 1);
  // Above N + 1 + 200 for any group, so an escrow has nonces to serve before its routing stop.
  const maxNonce = whole(env, 'DEVNET_MAX_NONCE', 1_000);
  return {
    blockIntervalMs,
    ...(epochLength === undefined ? {} : { epoch: { epochLength } }),
    ...(executionTimeout === undefined && maxNonce === undefined
      ? {}
      : {
          params: (p) => {
            if (executionTimeout !== undefined) p.devshardEscrow.executionTimeout = BigInt(executionTimeout);
            if (maxNonce !== undefined) p.devshardEscrow.maxNonce = BigInt(maxNonce);
          },
        }),
  };
}

/** An unset or empty variable is undefined; anything but a whole number ≥ `min` stops the start. */
function whole(env: Env, name: string, min: number): number | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min)
    throw new RangeError(`${name} must be a whole number ≥ ${min}, got ${raw}`);
  return n;
}
