// The usage consumer group on real Redis and Postgres: at-least-once delivery, idempotent by request
// id. A consumer that dies mid-batch, or crashes between the insert and the XACK, leaves entries
// pending; they are delivered again and produce no second row.
import { closeRedis, redisKeys } from '@gonka-gateway/shared';
import {
  createTestDatabase,
  createTestRedis,
  type TestDatabase,
  type TestRedis,
} from '@gonka-gateway/shared/testing';
import type postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AttemptRecord, sendUsage, type UsageRecord } from '../chat/usage-events.js';
import { usageRowOf } from './usage-row.js';
import { insertUsageRows, USAGE_GROUP, UsageWriter } from './usage-writer.js';

let redis: TestRedis;
let db: TestDatabase;
let sql: postgres.Sql;
const writers: UsageWriter[] = [];

beforeAll(async () => {
  [redis, db] = await Promise.all([createTestRedis(), createTestDatabase()]);
  // The client the app passes (drizzle's postgres.js), so its parameter handling is what is tested.
  sql = db.sql as unknown as postgres.Sql;
});
afterAll(async () => {
  for (const w of writers) await w.stop();
  await Promise.all([redis.cleanup(), db.drop()]);
});

function record(requestId: string, cost?: { cost: bigint; final: boolean }): UsageRecord {
  return {
    requestId,
    keyId: 'k1',
    model: 'm',
    escrowId: '7',
    nonces: [11n, 12n],
    inputTokens: 5,
    outputTokens: 9,
    status: 200,
    totalMs: 12.5,
    ttftMs: 3.25,
    replicaId: 'r1',
    cost,
  };
}

function writer(keys: ReturnType<typeof redisKeys>, consumer: string, claimIdleMs = 60_000) {
  const w = new UsageWriter({ redis: redis.redis, keys, sql, consumer, claimIdleMs, blockMs: 50 });
  writers.push(w);
  return w;
}

type Entry = [string, string[]];
/** A consumer that reads a batch and then dies: the entries stay pending on it. */
async function readAsDead(keys: ReturnType<typeof redisKeys>, consumer: string): Promise<Entry[]> {
  const reply = (await redis.redis.xreadgroup(
    'GROUP',
    USAGE_GROUP,
    consumer,
    'COUNT',
    100,
    'STREAMS',
    keys.usageStream,
    '>',
  )) as [string, Entry[]][] | null;
  return reply?.[0]?.[1] ?? [];
}

async function rows(prefix: string) {
  return sql<{ request_id: string; cost: string | null; cost_final: boolean; nonce: string }[]>`
    select request_id, cost::text, cost_final, nonce::text from usage_records
    where request_id like ${`${prefix}%`} order by request_id`;
}

async function pending(keys: ReturnType<typeof redisKeys>): Promise<number> {
  const [count] = (await redis.redis.xpending(keys.usageStream, USAGE_GROUP)) as [number];
  return Number(count);
}

describe('usage writer', () => {
  it('takes over what a dead consumer left mid-batch without duplicating rows', async () => {
    const keys = redisKeys(`${redis.prefix}dead:`);
    await writer(keys, 'probe').ensureGroup();
    for (let i = 0; i < 6; i++)
      await sendUsage(redis.redis, keys, record(`dead-${i}`, { cost: 100n, final: true }));
    const batch = await readAsDead(keys, 'dead-replica');
    expect(batch).toHaveLength(6);
    // It wrote half the batch and died before the rest and before XACK.
    await insertUsageRows(
      sql,
      batch.slice(0, 3).map(([, f]) => usageRowOf(f)!),
    );

    const live = writer(keys, 'live-replica', 0);
    expect(await live.claim()).toBe(6);
    expect(await pending(keys)).toBe(0);
    const written = await rows('dead-');
    expect(written.map((r) => r.request_id)).toEqual([0, 1, 2, 3, 4, 5].map((i) => `dead-${i}`));
    expect(written.every((r) => r.cost === '100' && r.cost_final && r.nonce === '12')).toBe(true);
  });

  it('re-reads its own pending batch after a crash between insert and XACK', async () => {
    const keys = redisKeys(`${redis.prefix}crash:`);
    await writer(keys, 'probe').ensureGroup();
    for (let i = 0; i < 4; i++)
      await sendUsage(redis.redis, keys, record(`crash-${i}`, { cost: 50n, final: false }));
    const batch = await readAsDead(keys, 'replica-w');
    await insertUsageRows(
      sql,
      batch.map(([, f]) => usageRowOf(f)!),
    );
    expect(await pending(keys)).toBe(4);

    // The same replica restarts (same consumer name): its pending entries come back first.
    const restarted = writer(keys, 'replica-w');
    await restarted.start();
    await expect.poll(() => pending(keys)).toBe(0);
    await restarted.stop();
    expect((await rows('crash-')).map((r) => [r.request_id, r.cost, r.cost_final])).toEqual(
      [0, 1, 2, 3].map((i) => [`crash-${i}`, '50', false]),
    );
  });

  it('a later event finalizes the cost; an older one redelivered never undoes it', async () => {
    const keys = redisKeys(`${redis.prefix}final:`);
    const w = writer(keys, 'replica-f');
    await w.ensureGroup();
    // Both in one batch (one statement): the final one wins.
    await sendUsage(redis.redis, keys, record('final-a', { cost: 900n, final: false }));
    await sendUsage(redis.redis, keys, record('final-a', { cost: 321n, final: true }));
    // Across batches, in either order.
    await sendUsage(redis.redis, keys, record('final-b', { cost: 900n, final: false }));
    await sendUsage(redis.redis, keys, record('final-c', { cost: 77n, final: true }));
    await w.step(redis.redis, '>', false);
    await sendUsage(redis.redis, keys, record('final-b', { cost: 123n, final: true }));
    await sendUsage(redis.redis, keys, record('final-c', { cost: 900n, final: false }));
    await sendUsage(redis.redis, keys, record('final-d'));
    await w.step(redis.redis, '>', false);
    expect((await rows('final-')).map((r) => [r.request_id, r.cost, r.cost_final])).toEqual([
      ['final-a', '321', true],
      ['final-b', '123', true],
      ['final-c', '77', true],
      ['final-d', null, false],
    ]);
    expect(await pending(keys)).toBe(0);
  });

  it("stores the request's attempts as sent, null without them, and keeps them when the final cost comes", async () => {
    const keys = redisKeys(`${redis.prefix}attempts:`);
    const w = writer(keys, 'replica-t');
    await w.ensureGroup();
    const attempts: AttemptRecord[] = [
      {
        escrow_id: '7',
        nonce: '11',
        participant: 'gonka1slow',
        hedge: false,
        started_ms: 0,
        receipt_ms: 40,
        ended_ms: 2_050,
        deadlines_hit: ['first_token'],
        outcome: 'cancelled',
        error: 'first_token_timeout',
        burned_nonces: ['10'],
      },
      {
        escrow_id: '7',
        nonce: '12',
        participant: 'gonka1fast',
        hedge: true,
        started_ms: 2_000,
        receipt_ms: 2_030,
        first_token_ms: 2_210,
        ended_ms: 3_400,
        deadlines_hit: [],
        outcome: 'served',
        output_tokens: 9,
        cost: '900',
        cost_final: false,
      },
    ];
    await sendUsage(redis.redis, keys, { ...record('attempts-a', { cost: 900n, final: false }), attempts });
    await sendUsage(redis.redis, keys, record('attempts-b'));
    await w.step(redis.redis, '>', false);
    // The final cost of a later event without attempts leaves the stored ones.
    await sendUsage(redis.redis, keys, record('attempts-a', { cost: 321n, final: true }));
    await w.step(redis.redis, '>', false);
    const stored = await sql<{ request_id: string; attempts: unknown; cost: string }[]>`
      select request_id, attempts, cost::text from usage_records
      where request_id like 'attempts-%' order by request_id`;
    expect(stored).toEqual([
      { request_id: 'attempts-a', attempts, cost: '321' },
      { request_id: 'attempts-b', attempts: null, cost: null },
    ]);
    expect(usageRowOf(['request_id', 'x', 'status', '200', 'at_ms', '1', 'attempts', '{oops'])).toMatchObject(
      {
        attempts: null,
      },
    );
  });

  it('the loop acknowledges a batch with its next read (one write per window), and what is left at stop', async () => {
    const keys = redisKeys(`${redis.prefix}acks:`);
    const w = new UsageWriter({
      redis: redis.redis,
      keys,
      sql,
      consumer: 'replica-a',
      blockMs: 50,
      batchWindowMs: 1_000,
    });
    writers.push(w);
    await w.ensureGroup();
    await w.start();
    for (let i = 0; i < 3; i++) await sendUsage(redis.redis, keys, record(`acks-${i}`));
    await expect.poll(async () => (await rows('acks-')).length, { timeout: 5_000 }).toBe(3);
    // Inserted, not yet all acknowledged: the loop waits out its window before the next read.
    expect(await pending(keys)).toBeGreaterThan(0);
    await expect.poll(() => pending(keys), { timeout: 5_000 }).toBe(0);
    for (let i = 3; i < 5; i++) await sendUsage(redis.redis, keys, record(`acks-${i}`));
    await expect.poll(async () => (await rows('acks-')).length, { timeout: 5_000 }).toBe(5);
    // The last batch (one or both: the loop may have read them apart) waits for the next read.
    expect(await pending(keys)).toBeGreaterThan(0);
    await w.stop();
    expect(await pending(keys)).toBe(0);
  });

  it('stop() ends a blocked read at once instead of waiting out its block, and loses nothing', async () => {
    const keys = redisKeys(`${redis.prefix}unblock:`);
    // The writer's reading connection inherits this one's name, so Redis' client list can find it.
    const name = `usage-unblock-${process.pid}-${Date.now()}`;
    const own = redis.redis.duplicate({ connectionName: name });
    try {
      // A block far longer than the test's timeout: only CLIENT UNBLOCK lets stop() return.
      const w = new UsageWriter({ redis: own, keys, sql, consumer: 'replica-a', blockMs: 600_000 });
      await w.ensureGroup();
      await w.start();
      await sendUsage(redis.redis, keys, record('unblock-a'));
      await expect.poll(async () => (await rows('unblock-')).length).toBe(1);
      const blocked = async () =>
        ((await redis.redis.client('LIST')) as string)
          .split('\n')
          .some((line) => line.includes(` name=${name} `) && / flags=b /.test(line));
      await expect.poll(blocked, { timeout: 10_000 }).toBe(true);
      await w.stop();
      expect(await pending(keys)).toBe(0);
    } finally {
      await closeRedis(own);
    }
  });
});
