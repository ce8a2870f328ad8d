// Pruning of `rotation_events` (the rotation and depletion markers, upkeep/rotation-record.ts), which
// otherwise grow by every marker of every model for as long as the gateway runs, and with them the
// `once` check of recordEvent (it reads a model's events). The `rotation-events-purge` job deletes
// events older than ROTATION_EVENTS_RETENTION_DAYS in bounded batches, except each model's newest
// RECENT_EVENTS_PER_MODEL: exactly what GET /v1/debug/rotation lists as `events` (gateway-spec.md
// §2.8 and §3.4 promise markers in logs and that debug output, nothing older), so pruning never
// changes that answer. Deleting what is already gone is a no-op: the job may run any number of
// times, on any controller. A `once` condition still present after the retention is recorded (and
// logged) again: once per 30 days, a reminder rather than noise.
import type { Sql } from 'postgres';
import { RECENT_EVENTS_PER_MODEL } from './rotation-record.js';

/** Long enough to look back over several epochs of rotation when something went wrong. */
export const ROTATION_EVENTS_RETENTION_DAYS = 30;

const BATCH = 5_000;
/** One job run deletes at most this many batches; the next run continues. */
const MAX_BATCHES = 100;

/** Deletes events older than the retention (each model's newest ones kept); returns how many. */
export async function purgeOldRotationEvents(
  sql: Sql,
  now = new Date(),
): Promise<{ deleted: number; before: string }> {
  const before = new Date(now.getTime() - ROTATION_EVENTS_RETENTION_DAYS * 86_400_000).toISOString();
  let deleted = 0;
  for (let i = 0; i < MAX_BATCHES; i++) {
    const done = await sql`
      delete from rotation_events where id in (
        select id from (
          select id, at, row_number() over (partition by model_id order by id desc) as newer
            from rotation_events) ranked
         where ranked.at < ${before}::timestamptz and ranked.newer > ${RECENT_EVENTS_PER_MODEL}
         limit ${BATCH})`;
    deleted += done.count;
    if (done.count < BATCH) break;
  }
  return { deleted, before };
}
