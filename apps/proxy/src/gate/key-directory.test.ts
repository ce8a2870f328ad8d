// KeyDirectory against real Postgres: a key inserted right after a read is found by the miss path
// (a read that started after the miss), and misses share forced reads instead of one read each.
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
});
