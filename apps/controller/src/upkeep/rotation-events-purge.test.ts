// The rotation markers' retention against real Postgres: events past ROTATION_EVENTS_RETENTION_DAYS
// are deleted except each model's newest ones, so /v1/debug/rotation's `events` answer is the same
// before and after, and a second run deletes nothing.
import { createTestDatabase, type TestDatabase } from '@gonka-gateway/shared/testing';
import type { Sql } from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeOldRotationEvents, ROTATION_EVENTS_RETENTION_DAYS } from './rotation-events-purge.js';
import { RECENT_EVENTS_PER_MODEL, recentEvents } from './rotation-record.js';

const DAY = 86_400_000;
const now = new Date('2031-06-01T12:00:00Z');
let db: TestDatabase;
let sql: Sql;

beforeAll(async () => {
  db = await createTestDatabase();
  sql = db.sql as unknown as Sql;
});
afterAll(async () => {
  await db?.drop();
});

async function insertEvents(modelId: string, count: number, ageDays: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    // Older events first (ids grow with time, as recordEvent writes them).
    const at = new Date(now.getTime() - ageDays * DAY + i * 1_000).toISOString();
    await sql`
      insert into rotation_events (model_id, marker, epoch, detail, at)
      values (${modelId}, 'escrow_rotation_created', ${String(100 + i)}, '{"slot":1}'::jsonb, ${at}::timestamptz)`;
  }
}

const countOf = async (modelId: string) =>
  Number(
    (
      await sql<{ n: string }[]>`select count(*)::text as n from rotation_events where model_id = ${modelId}`
    )[0]!.n,
  );

describe('rotation events purge', () => {
  it("deletes events past the retention but never a model's newest, and is idempotent", async () => {
    const old = ROTATION_EVENTS_RETENTION_DAYS + 10;
    // busy: 25 old and 2 fresh events; quiet: only 3 old ones; recent: 25 just inside the retention.
    await insertEvents('busy', 25, old);
    await insertEvents('busy', 2, 1);
    await insertEvents('quiet', 3, old);
    await insertEvents('recent', 25, ROTATION_EVENTS_RETENTION_DAYS - 1);
    const shownBefore = await Promise.all(['busy', 'quiet', 'recent'].map((m) => recentEvents(sql, m)));

    const first = await purgeOldRotationEvents(sql, now);
    // busy keeps its newest 20 (2 fresh + 18 old): 7 old ones go; quiet and recent keep all.
    expect(first).toEqual({
      deleted: 25 + 2 - RECENT_EVENTS_PER_MODEL,
      before: new Date(now.getTime() - ROTATION_EVENTS_RETENTION_DAYS * DAY).toISOString(),
    });
    expect(await countOf('busy')).toBe(RECENT_EVENTS_PER_MODEL);
    expect(await countOf('quiet')).toBe(3);
    expect(await countOf('recent')).toBe(25);
    // What /v1/debug/rotation shows is unchanged.
    expect(await Promise.all(['busy', 'quiet', 'recent'].map((m) => recentEvents(sql, m)))).toEqual(
      shownBefore,
    );

    expect((await purgeOldRotationEvents(sql, now)).deleted).toBe(0);
    // Two days later the events that were just inside the retention go too (beyond the newest 20).
    expect((await purgeOldRotationEvents(sql, new Date(now.getTime() + 2 * DAY))).deleted).toBe(5);
  });
});
