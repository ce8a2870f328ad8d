// A usage stream entry (chat/usage-events.ts) as a usage_records row. Money and nonces stay decimal
// strings (numeric(20,0) columns), never JavaScript numbers; rows travel to Postgres as one JSON
// document, which any client (the app's drizzle-wrapped postgres.js included) binds as text.

export interface UsageRow {
  readonly request_id: string;
  readonly key_id: string;
  readonly model: string;
  readonly escrow_id: string | null;
  readonly nonce: string | null;
  readonly nonces: string;
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly cost: string | null;
  readonly cost_final: boolean;
  readonly status: number;
  readonly total_ms: number;
  readonly ttft_ms: number | null;
  readonly replica_id: string;
  /** ISO time the proxy answered. */
  readonly at: string;
  /** The request's attempts (chat/usage-events.ts AttemptRecord[]) as sent; null when none came. */
  readonly attempts: readonly unknown[] | null;
}

const UINT = /^\d{1,20}$/;

/** Undefined for an entry that cannot be a usage record (it is acknowledged and logged, never retried). */
export function usageRowOf(fields: readonly string[]): UsageRow | undefined {
  const f = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) f.set(fields[i]!, fields[i + 1]!);
  const requestId = f.get('request_id');
  const status = Number(f.get('status'));
  const at = Number(f.get('at_ms'));
  if (!requestId || !Number.isInteger(status) || !Number.isFinite(at)) return undefined;
  const uint = (k: string): string | null => {
    const v = f.get(k) ?? '';
    return UINT.test(v) ? v : null;
  };
  const int = (k: string): number => {
    const v = Number(f.get(k));
    return Number.isFinite(v) && v >= 0 ? Math.round(v) : 0;
  };
  const nonces = (f.get('nonces') ?? '').split(',').filter((n) => UINT.test(n));
  const cost = uint('cost');
  return {
    request_id: requestId,
    key_id: f.get('key_id') ?? 'none',
    model: f.get('model') ?? '',
    escrow_id: uint('escrow_id'),
    nonce: nonces.at(-1) ?? null,
    nonces: nonces.join(','),
    input_tokens: int('input_tokens'),
    output_tokens: int('output_tokens'),
    cost,
    cost_final: cost !== null && f.get('cost_final') === '1',
    status,
    total_ms: int('total_ms'),
    ttft_ms: f.get('ttft_ms') ? int('ttft_ms') : null,
    replica_id: f.get('replica_id') ?? '',
    at: new Date(at).toISOString(),
    attempts: attemptsOf(f.get('attempts')),
  };
}

/** The `attempts` field: a JSON array, or null when absent or unreadable (the row is kept either way). */
function attemptsOf(value: string | undefined): readonly unknown[] | null {
  if (!value) return null;
  try {
    const parsed: unknown = JSON.parse(value);
    return Array.isArray(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

/**
 * One row per request id within a batch (Postgres refuses to upsert the same key twice in one
 * statement); a final cost wins over a reservation, otherwise the first delivery.
 */
export function dedupeRows(rows: readonly UsageRow[]): UsageRow[] {
  const byId = new Map<string, UsageRow>();
  for (const r of rows) {
    const seen = byId.get(r.request_id);
    if (!seen || (r.cost_final && !seen.cost_final)) byId.set(r.request_id, r);
  }
  return [...byId.values()];
}
