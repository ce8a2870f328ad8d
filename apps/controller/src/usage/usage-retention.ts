// How long usage records are kept: the operator sets retention_days (0 = keep everything) through
// /v1/admin/usage/settings; the `usage-purge` BullMQ job deletes older records in bounded batches.
// Deleting what is already gone is a no-op, so the job may run any number of times. Budget periods
// longer than the retention lose their ledger seed (docs/keys-and-usage.md): the live Redis
// counters are unaffected.
import type { Sql } from 'postgres';

export interface UsageSettings {
  retention_days: number;
  metrics_top_keys: number;
}

export const DEFAULT_USAGE_SETTINGS: UsageSettings = { retention_days: 0, metrics_top_keys: 10 };

export async function readUsageSettings(sql: Sql): Promise<UsageSettings> {
  const [row] = await sql<UsageSettings[]>`
    select retention_days, metrics_top_keys from usage_settings where id = 1`;
  return row ?? DEFAULT_USAGE_SETTINGS;
}

export async function writeUsageSettings(sql: Sql, change: Partial<UsageSettings>): Promise<UsageSettings> {
  const current = await readUsageSettings(sql);
  const next = { ...current, ...change };
  await sql`
    insert into usage_settings (id, retention_days, metrics_top_keys, updated_at)
    values (1, ${next.retention_days}, ${next.metrics_top_keys}, now())
    on conflict (id) do update set retention_days = excluded.retention_days,
      metrics_top_keys = excluded.metrics_top_keys, updated_at = now()`;
  return next;
}

const BATCH = 5_000;
/** One job run deletes at most this many batches; the next run continues. */
const MAX_BATCHES = 200;

/** Deletes records older than the retention; returns how many. */
export async function purgeExpiredUsage(
  sql: Sql,
  now = new Date(),
): Promise<{ deleted: number; before: string | null }> {
  const { retention_days } = await readUsageSettings(sql);
  if (retention_days <= 0) return { deleted: 0, before: null };
  const before = new Date(now.getTime() - retention_days * 86_400_000).toISOString();
  let deleted = 0;
  for (let i = 0; i < MAX_BATCHES; i++) {
    const done = await sql`
      delete from usage_records where request_id in (
        select request_id from usage_records where at < ${before}::timestamptz limit ${BATCH})`;
    deleted += done.count;
    if (done.count < BATCH) break;
  }
  return { deleted, before };
}
