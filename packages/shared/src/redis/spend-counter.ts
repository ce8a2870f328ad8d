// A stored API key's budget counter of one period (keys.keySpend) moved by a correction:
// a usage record whose cost became the real one (the proxy's cost reconciler, the controller's
// escrow reconciliation). Only a counter that exists moves: a missing one is seeded from the ledger
// by the next admission, and the ledger already holds the corrected cost.
import type { Redis } from 'ioredis';

// KEYS: 1 spend counter. ARGV: 1 signed ngonka.
const ADJUST = `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('INCRBY', KEYS[1], ARGV[1]) end
return false
`;

export async function adjustSpendCounter(redis: Redis, counterKey: string, delta: bigint): Promise<void> {
  if (delta === 0n) return;
  await redis.eval(ADJUST, 1, counterKey, delta.toString());
}
