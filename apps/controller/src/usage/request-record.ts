// One request's record in the usage ledger (usage_records), with the attempts the proxy sent with it
// (apps/proxy/src/chat/usage-events.ts AttemptRecord). Money and nonces leave as decimal strings.
import type { Sql } from 'postgres';

export interface RequestRecord {
  request_id: string;
  /** As the admin API names a key: a stored key's id (`12`), `env` or `admin`. */
  key_id: string;
  model: string;
  escrow_id: string | null;
  /** Every attempt's nonce in order; the last one served. */
  nonces: string[];
  status: number;
  input_tokens: number;
  output_tokens: number;
  cost: string | null;
  cost_final: boolean;
  total_ms: number;
  ttft_ms: number | null;
  replica_id: string;
  /** When the proxy answered. */
  at: string;
  /** When the row was written (the usage stream's consumer). */
  created_at: string;
  /** Null when the proxy sent none. */
  attempts: unknown[] | null;
}

export async function requestRecord(sql: Sql, requestId: string): Promise<RequestRecord | undefined> {
  const [row] = await sql<
    (Omit<RequestRecord, 'nonces' | 'at' | 'created_at'> & { nonces: string; at: Date; created_at: Date })[]
  >`
    select request_id, key_id, model, escrow_id::text as escrow_id, nonces, status, input_tokens, output_tokens,
           cost::text as cost, cost_final, total_ms, ttft_ms, replica_id, at, created_at, attempts
      from usage_records where request_id = ${requestId}`;
  if (row === undefined) return undefined;
  return {
    ...row,
    // The ledger stores a stored key as `key-<id>` (ledger-query.ts ledgerKeyId).
    key_id: row.key_id.startsWith('key-') ? row.key_id.slice(4) : row.key_id,
    nonces: row.nonces === '' ? [] : row.nonces.split(','),
    at: row.at.toISOString(),
    created_at: row.created_at.toISOString(),
    attempts: Array.isArray(row.attempts) ? row.attempts : null,
  };
}
