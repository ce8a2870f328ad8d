// The escrows whose settle window has closed while the gateway's records show them unsettled
// (chain-and-network.md §2.6 Settle rule 9: the chain accepts a settle only in the escrow's epoch or
// the next). The controller's rotation tick writes the whole list on every pass (apps/controller
// upkeep/retire-by-pass.ts); GET /v1/status shows it with one GET, so it stays as fast as the pool
// snapshot. Amounts are decimal strings (uint64 ngonka).
import type { Redis } from 'ioredis';
import type { RedisKeys } from './keys.js';

export interface ClosedWindowEscrow {
  escrow_id: string;
  model_id: string;
  /** The deposit locked on chain, ngonka. */
  amount: string;
  epoch_index: string;
  /** The gateway's lifecycle state (architecture §3), never `settled`. */
  state: string;
}

export interface SettleWindowSummary {
  escrows: ClosedWindowEscrow[];
  /** Σ amount of `escrows`, ngonka. */
  total_amount: string;
  /** When the controller wrote it (ms since the Unix epoch). */
  updated_at_ms: number;
}

export function summarizeClosedWindows(
  escrows: readonly ClosedWindowEscrow[],
  nowMs = Date.now(),
): SettleWindowSummary {
  const total = escrows.reduce((sum, e) => sum + BigInt(e.amount), 0n);
  return { escrows: [...escrows], total_amount: total.toString(), updated_at_ms: nowMs };
}

export async function writeSettleWindowSummary(
  redis: Redis,
  keys: RedisKeys,
  summary: SettleWindowSummary,
): Promise<void> {
  await redis.set(keys.settleWindowClosed, JSON.stringify(summary));
}

/** The stored summary, or null when no controller wrote one yet (or it does not parse). */
export async function readSettleWindowSummary(
  redis: Redis,
  keys: RedisKeys,
): Promise<SettleWindowSummary | null> {
  const raw = await redis.get(keys.settleWindowClosed);
  if (raw === null) return null;
  try {
    const o = JSON.parse(raw) as SettleWindowSummary;
    return Array.isArray(o.escrows) && typeof o.total_amount === 'string' ? o : null;
  } catch {
    return null;
  }
}
