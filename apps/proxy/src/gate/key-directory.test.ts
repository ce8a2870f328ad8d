// KeyDirectory against real Postgres: a key inserted right after a read is found by the miss path
// (a read that started after the miss), and misses share forced reads instead of one read each. The
// two changes no `settings:changes` message announces are read without one: a budget period ending
// and an escrow registered since the last read (reported by the pool snapshot).

import { performance } from 'node:perf_hooks';
import { hashApiKey } from '@gonka-gateway/shared';
import { createTestDatabase, type TestDatabase } from '@gonka-gateway/shared/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyDirectory } from './key-directory.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe('KeyDirectory', () => {
  it('finds a key created just after a read, and refuses nothing it should not', async () => {
    const directory = new KeyDirectory({ database: db, missReloadMs: 200 });
    await directory.reload();
    expect(directory.keys).toEqual([]);
    const key = `sk-${'12'.repeat(24)}`;
    await db.sql`
      insert into api_keys (name, key_hash, display_prefix, models, budget_ngonka, budget_period, rpm)
      values ('k', ${hashApiKey(key)}, 'sk-12121212…', '["m1"]'::jsonb, 1000, 'daily', 5)`;
    expect(await directory.reloadAfterMiss()).toBe(true);
    expect(directory.keys).toHaveLength(1);
    expect(directory.keys[0]).toMatchObject({
      models: new Set(['m1']),
      budget: 1000n,
      period: 'daily',
      rpm: 5,
      tpm: 0,
      ledgerSpend: 0n,
    });
    expect(directory.keys[0]!.hash.equals(hashApiKey(key))).toBe(true);
  });

  it('twenty misses at once share the forced reads', async () => {
    const directory = new KeyDirectory({ database: db, missReloadMs: 200 });
    await directory.reload();
    const reads = new Set<Promise<void>>();
    const original = directory.reload.bind(directory);
    directory.reload = () => {
      const read = original();
      reads.add(read);
      return read;
    };
    const results = await Promise.all(Array.from({ length: 20 }, () => directory.reloadAfterMiss()));
    expect(results.every(Boolean)).toBe(true);
    // One read started after all twenty arrived answers them all (a second only if timing splits them).
    expect(reads.size).toBeGreaterThanOrEqual(1);
    expect(reads.size).toBeLessThanOrEqual(2);
  });

  it("reads the spend again when a budget period ends, so the last period's spend seeds nothing", async () => {
    // A clock 300 ms before a UTC midnight, running at real speed.
    const midnight = Date.parse('2031-03-05T00:00:00Z');
    const startedAt = performance.now();
    const now = () => new Date(midnight - 300 + (performance.now() - startedAt));
    const key = `sk-${'34'.repeat(24)}`;
    const [row] = await db.sql<{ id: string }[]>`
      insert into api_keys (name, key_hash, display_prefix, budget_ngonka, budget_period)
      values ('daily', ${hashApiKey(key)}, 'sk-34343434…', 1000, 'daily') returning id::text as id`;
    await db.sql`
      insert into usage_records (request_id, key_id, model, input_tokens, output_tokens, cost, status, total_ms,
                                 replica_id, at)
      values ('period-end-1', ${`key-${row!.id}`}, 'm1', 1, 1, 400, 200, 5, 'r', ${new Date(midnight - 60_000).toISOString()}::timestamptz)`;
    const directory = new KeyDirectory({ database: db, now });
    try {
      await directory.reload();
      const spendOf = () => directory.keys.find((k) => k.id === row!.id)?.ledgerSpend;
      expect(spendOf()).toBe(400n);
      // No reload is called: the directory reads at the period's end by itself.
      await expect.poll(spendOf, { timeout: 10_000 }).toBe(0n);
    } finally {
      directory.stop();
      await db.sql`delete from api_keys where id = ${row!.id}::bigint`;
    }
  });

  it('prices an escrow the pool reports and it has not seen, once per escrow', async () => {
    const directory = new KeyDirectory({ database: db });
    await directory.reload();
    expect(directory.tokenPrice('priced-model')).toBeUndefined();
    await db.sql`
      insert into escrows (escrow_id, chain_id, model_id, creator, amount, epoch_index, version, state, chain_row)
      values (9101, 'c', 'priced-model', 'gonka1x', 1000, 1, 'v5', 'active', '{"token_price":"7"}'::jsonb)`;
    let reads = 0;
    const original = directory.reload.bind(directory);
    directory.reload = () => {
      reads++;
      return original();
    };
    try {
      directory.followPool([9101n]);
      expect(reads).toBe(1);
      await expect.poll(() => directory.tokenPrice('priced-model')).toBe(7n);
      // Priced now; and an escrow the pool holds but Postgres does not list open is asked about once.
      directory.followPool([9101n, 9102n]);
      directory.followPool([9101n, 9102n]);
      expect(reads).toBe(2);
    } finally {
      directory.stop();
      await db.sql`delete from escrows where escrow_id = 9101`;
    }
  });
});
