import { ChainError } from '@gonka-gateway/chain';
import { describe, expect, it } from 'vitest';
import { NodeBackoff } from './node-backoff.js';

/** A logger that keeps the markers it was given. */
function markers() {
  const seen: string[] = [];
  const log = (fields: object) => seen.push((fields as { marker: string }).marker);
  return { seen, logger: { info: log, warn: log } as never };
}

const nodeDown = () => new ChainError('CHAIN_ERR_HTTP_STATUS', { status: 503 });

describe('NodeBackoff', () => {
  it('skips a node-bound pass for a delay that doubles up to the cap, logs once, and resumes at the first answer', async () => {
    let now = 0;
    const { seen, logger } = markers();
    const backoff = new NodeBackoff({ name: 'p', everyMs: 1_000, maxMs: 4_000, logger, now: () => now });
    let up = false;
    let calls = 0;
    const pass = async () => {
      calls++;
      if (!up) throw nodeDown();
      return 'ran';
    };
    expect(await backoff.run(pass)).toEqual({ waitingForNode: true, retryInMs: 1_000 });
    now = 500;
    expect(await backoff.run(pass)).toMatchObject({ waitingForNode: true });
    expect(calls).toBe(1); // skipped: the node is not asked again before the delay
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      now += 10_000;
      delays.push(((await backoff.run(pass)) as { retryInMs: number }).retryInMs);
    }
    expect(delays).toEqual([2_000, 4_000, 4_000, 4_000]);
    expect(seen).toEqual(['node_unreachable']);

    up = true;
    now += 10_000;
    expect(await backoff.run(pass)).toBe('ran');
    expect(backoff.failures).toBe(0);
    expect(seen).toEqual(['node_unreachable', 'node_reachable_again']);
  });

  it('runs the waiting branch while the node is out, and rethrows what is not the node', async () => {
    const { logger } = markers();
    const backoff = new NodeBackoff({ name: 'p', everyMs: 1_000, logger, now: () => 0 });
    const firsts: boolean[] = [];
    const waiting = async (_err: unknown, first: boolean) => {
      firsts.push(first);
      return 'stale copy';
    };
    expect(await backoff.run(() => Promise.reject(nodeDown()), waiting)).toBe('stale copy');
    expect(await backoff.run(() => Promise.resolve('fresh'), waiting)).toBe('stale copy');
    expect(firsts).toEqual([true, false]);
    const other = new NodeBackoff({ name: 'q', everyMs: 1_000, logger });
    await expect(other.run(() => Promise.reject(new Error('postgres down')))).rejects.toThrow(
      'postgres down',
    );
  });
});
