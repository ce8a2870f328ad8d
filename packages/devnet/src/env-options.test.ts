// The DEVNET_* knobs of `pnpm devnet` and `./start`: parsed into devnet options, defaults when unset,
// a clear error naming the variable otherwise.
import { describe, expect, it } from 'vitest';
import { defaultParams } from './chain/params.js';
import { devnetOptionsFromEnv } from './env-options.js';

describe('devnet options from the environment', () => {
  it('sets the block timer, epoch length and execution timeout; leaves the rest at the defaults', () => {
    const o = devnetOptionsFromEnv({
      DEVNET_BLOCK_INTERVAL_MS: '250',
      DEVNET_EPOCH_LENGTH: '200',
      DEVNET_EXECUTION_TIMEOUT: '10',
    });
    expect(o.blockIntervalMs).toBe(250);
    expect(o.epoch).toEqual({ epochLength: 200 });
    const params = defaultParams([]);
    o.params?.(params);
    expect(params.devshardEscrow.executionTimeout).toBe(10n);
    expect(devnetOptionsFromEnv({ DEVNET_EPOCH_LENGTH: ' ' })).toEqual({ blockIntervalMs: 1000 });
  });

  it('sets max_nonce alone, keeping the other params at their defaults', () => {
    const params = defaultParams([]);
    const executionTimeout = params.devshardEscrow.executionTimeout;
    devnetOptionsFromEnv({ DEVNET_MAX_NONCE: '25000' }).params?.(params);
    expect(params.devshardEscrow.maxNonce).toBe(25_000n);
    expect(params.devshardEscrow.executionTimeout).toBe(executionTimeout);
    expect(() => devnetOptionsFromEnv({ DEVNET_MAX_NONCE: '500' })).toThrow(/DEVNET_MAX_NONCE/);
  });

  it('refuses what is not a whole number in range, naming the variable', () => {
    expect(() => devnetOptionsFromEnv({ DEVNET_EPOCH_LENGTH: '20' })).toThrow(
      /DEVNET_EPOCH_LENGTH must be .* ≥ 21/,
    );
    expect(() => devnetOptionsFromEnv({ DEVNET_EXECUTION_TIMEOUT: '1.5' })).toThrow(
      /DEVNET_EXECUTION_TIMEOUT/,
    );
    expect(() => devnetOptionsFromEnv({ DEVNET_BLOCK_INTERVAL_MS: 'fast' })).toThrow(
      /DEVNET_BLOCK_INTERVAL_MS/,
    );
  });
});
