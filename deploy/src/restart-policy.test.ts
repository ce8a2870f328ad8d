import { describe, expect, it } from 'vitest';
import { DEFAULT_RESTART_POLICY, decideRestart } from './restart-policy.js';

describe('decideRestart', () => {
  it('restarts after a moment, doubling the delay for exits close together, capped', () => {
    const exits: number[] = [];
    expect(decideRestart('SIGKILL', exits, 0)).toEqual({ action: 'restart', delayMs: 1_000 });
    expect(decideRestart(1, exits, 2_000)).toEqual({ action: 'restart', delayMs: 2_000 });
    expect(decideRestart(1, exits, 4_000)).toEqual({ action: 'restart', delayMs: 4_000 });
    expect(decideRestart(1, exits, 8_000)).toEqual({ action: 'restart', delayMs: 8_000 });
    expect(decideRestart(1, exits, 16_000)).toEqual({ action: 'restart', delayMs: 8_000 });
  });

  it('gives up on a crash loop, and forgets exits older than the window', () => {
    const exits: number[] = [];
    for (let i = 0; i < DEFAULT_RESTART_POLICY.maxExitsInWindow; i++) {
      expect(decideRestart(1, exits, i * 1_000).action).toBe('restart');
    }
    expect(decideRestart(1, exits, 5_500)).toMatchObject({ action: 'give_up' });
    const later: number[] = [0, 1_000];
    expect(decideRestart(1, later, 120_000)).toEqual({ action: 'restart', delayMs: 1_000 });
    expect(later).toEqual([120_000]);
  });

  it('never restarts a configuration error', () => {
    expect(decideRestart(78, [], 0)).toEqual({ action: 'give_up', reason: 'configuration error (exit 78)' });
  });
});
