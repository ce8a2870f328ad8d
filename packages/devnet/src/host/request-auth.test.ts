// The ±30 s timestamp window of the host routes (devshard-protocol.md §4.1), at its exact edge: the
// clock is passed in, so the edge is tested without racing a real clock.
import { describe, expect, it } from 'vitest';
import { authenticateRequest, MAX_CLOCK_DRIFT_SECONDS } from './request-auth.js';

const NOW = 1_800_000_000n;
const body = new TextEncoder().encode('{}');
const withTimestamp = (ts: bigint) => ({
  'x-devshard-signature': 'ab'.repeat(65),
  'x-devshard-timestamp': ts.toString(),
});
const driftRefused = (ts: bigint) => {
  const result = authenticateRequest(withTimestamp(ts), '1', body, NOW);
  return 'message' in result && result.message === 'timestamp outside the allowed drift';
};

describe('request timestamp window', () => {
  it('accepts exactly ±30 s of drift and refuses 31 s either way', () => {
    expect(MAX_CLOCK_DRIFT_SECONDS).toBe(30n);
    expect(driftRefused(NOW - 30n)).toBe(false);
    expect(driftRefused(NOW + 30n)).toBe(false);
    expect(driftRefused(NOW)).toBe(false);
    expect(driftRefused(NOW - 31n)).toBe(true);
    expect(driftRefused(NOW + 31n)).toBe(true);
  });
});
