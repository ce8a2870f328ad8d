// The usage ledger as the operator queries it (docs/keys-and-usage.md): usage_records filtered by
// key, model, escrow and time, totalled (requests, input/output tokens, cost in ngonka, errors)
// overall or per key, model, escrow or UTC day, and the records themselves for a CSV export. Money
// is summed in Postgres numeric and leaves as decimal strings.
import type { Sql } from 'postgres';
import type { LedgerTotals, UsageGroupBy } from '../admin-api.js';

export const GROUP_BY = ['key', 'model', 'escrow', 'day'] as const satisfies readonly UsageGroupBy[];
export type GroupBy = (typeof GROUP_BY)[number];

export interface LedgerFilter {
  /** A stored key id (`12`), `env` (DEVSHARD_API_KEYS) or `admin`. */
  key?: string;
  model?: string;
  escrow?: string;
  /** Inclusive / exclusive ISO times. */
  from?: string;
  to?: string;
}

/** The key_id a usage row carries for a key as the admin API names it (apps/proxy gate/auth.ts). */
export function ledgerKeyId(key: string): string {
  return /^\d+$/.test(key) ? `key-${key}` : key;
}

function apiKeyName(keyId: string): string {
  return keyId.startsWith('key-') ? keyId.slice(4) : keyId;
}

const GROUP_EXPR: Record<GroupBy, string> = {
  key: 'key_id',
  model: 'model',
  escrow: "coalesce(escrow_id::text, 'none')",
  day: `to_char(at at time zone 'UTC', 'YYYY-MM-DD')`,
};

function where(sql: Sql, f: LedgerFilter) {
  return sql`where true
    ${f.key !== undefined ? sql`and key_id = ${ledgerKeyId(f.key)}` : sql``}
    ${f.model !== undefined ? sql`and model = ${f.model}` : sql``}
    ${f.escrow !== undefined ? sql`and escrow_id = ${f.escrow}::numeric` : sql``}
    ${f.from !== undefined ? sql`and at >= ${f.from}::timestamptz` : sql``}
    ${f.to !== undefined ? sql`and at < ${f.to}::timestamptz` : sql``}`;
}

export async function ledgerTotals(
  sql: Sql,
  filter: LedgerFilter,
  groupBy: GroupBy | undefined,
): Promise<{ data: LedgerTotals[]; total: LedgerTotals }> {
  const group = groupBy === undefined ? sql`null::text` : sql.unsafe(GROUP_EXPR[groupBy]);
  const rows = await sql<
    {
      grp: string | null;
      requests: string;
      input_tokens: string;
      output_tokens: string;
      cost: string;
      errors: string;
      unfinalized: string;
    }[]
  >`
    select ${group} as grp, count(*)::text as requests, coalesce(sum(input_tokens), 0)::text as input_tokens,
           coalesce(sum(output_tokens), 0)::text as output_tokens, coalesce(sum(cost), 0)::text as cost,
           count(*) filter (where status >= 400)::text as errors,
           count(*) filter (where not cost_final)::text as unfinalized
      from usage_records ${where(sql, filter)}
     group by 1 order by 1`;
  const data = rows.map((r) => ({
    group: r.grp === null ? null : groupBy === 'key' ? apiKeyName(r.grp) : r.grp,
    requests: Number(r.requests),
    input_tokens: Number(r.input_tokens),
    output_tokens: Number(r.output_tokens),
    cost_ngonka: r.cost,
    errors: Number(r.errors),
    unfinalized: Number(r.unfinalized),
  }));
  const total: LedgerTotals = {
    group: null,
    requests: 0,
    input_tokens: 0,
    output_tokens: 0,
    cost_ngonka: '0',
    errors: 0,
    unfinalized: 0,
  };
  let cost = 0n;
  for (const d of data) {
    total.requests += d.requests;
    total.input_tokens += d.input_tokens;
    total.output_tokens += d.output_tokens;
    total.errors += d.errors;
    total.unfinalized += d.unfinalized;
    cost += BigInt(d.cost_ngonka);
  }
  total.cost_ngonka = cost.toString();
  return { data: groupBy === undefined ? [] : data, total };
}

export const RECORD_COLUMNS = [
  'request_id',
  'at',
  'key',
  'model',
  'escrow_id',
  'nonce',
  'nonces',
  'input_tokens',
  'output_tokens',
  'cost_ngonka',
  'cost_final',
  'status',
  'total_ms',
  'ttft_ms',
  'replica_id',
] as const;

export type LedgerRecord = Record<(typeof RECORD_COLUMNS)[number], string | number | boolean | null>;

export async function ledgerRecords(sql: Sql, filter: LedgerFilter, limit: number): Promise<LedgerRecord[]> {
  const rows = await sql<(Omit<LedgerRecord, 'at' | 'key'> & { at: Date; key_id: string })[]>`
    select request_id, at, key_id, model, escrow_id::text as escrow_id, nonce::text as nonce, nonces,
           input_tokens, output_tokens, cost::text as cost_ngonka, cost_final, status, total_ms, ttft_ms, replica_id
      from usage_records ${where(sql, filter)}
     order by at, request_id limit ${limit}`;
  return rows.map(({ key_id, at, ...r }) => ({ ...r, key: apiKeyName(key_id), at: at.toISOString() }));
}

/** RFC 4180: fields with a comma, quote or line break are quoted, quotes doubled. */
export function toCsv(columns: readonly string[], rows: readonly Record<string, unknown>[]): string {
  const cell = (v: unknown) => {
    const s = v === null || v === undefined ? '' : String(v);
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return `${[columns.join(','), ...rows.map((r) => columns.map((c) => cell(r[c])).join(','))].join('\r\n')}\r\n`;
}
