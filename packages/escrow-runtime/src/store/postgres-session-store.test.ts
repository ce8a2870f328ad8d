// The SessionStore contract (packages/devshard src/testing/store-contract.ts, unchanged) against real Postgres,
// on a database of its own migrated like production; once on a plain postgres.js pool and once on
// the drizzle-wrapped handle the apps get from openDatabase() (its json serializers differ).
import { sessionStoreContract } from '@gonka-gateway/devshard/testing';
import { type Database, openDatabase } from '@gonka-gateway/shared';
import { createTestDatabase, type TestDatabase } from '@gonka-gateway/shared/testing';
import postgres, { type Sql } from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresSessionStore } from './postgres-session-store.js';

let database: TestDatabase;
let sql: Sql<Record<string, never>>;
let store: PostgresSessionStore;
let appDatabase: TestDatabase;
let app: Database;
let appStore: PostgresSessionStore;

beforeAll(async () => {
  [database, appDatabase] = await Promise.all([createTestDatabase(), createTestDatabase()]);
  app = openDatabase(appDatabase.url, { max: 16 });
  appStore = new PostgresSessionStore(app.sql);
  // Enough connections that racing writers really run at once instead of queueing in the pool.
  sql = postgres(database.url, { max: 16, onnotice: () => {} });
  store = new PostgresSessionStore(sql);
});

afterAll(async () => {
  await sql?.end({ timeout: 5 });
  await app?.close();
  await Promise.all([database?.drop(), appDatabase?.drop()]);
});

sessionStoreContract('postgres', () => store, { describe, it });
sessionStoreContract('postgres on openDatabase()', () => appStore, { describe, it });

describe('PostgresSessionStore uint64 columns', () => {
  it('keeps escrow ids, amounts and nonces exact up to 2^64 − 1', async () => {
    const max = 0xffff_ffff_ffff_ffffn;
    const escrowId = max.toString();
    const record = {
      escrowId,
      escrow: { escrowId: max, creator: 'gonka1c', amount: max, slots: ['gonka1a'], validationRate: 0.5 },
      tag: 'v5',
      version: 'v5',
      chainParams: { refusalTimeout: max - 1n },
    };
    await store.create(record);
    const { fencingToken } = await store.acquire(escrowId);
    await store.saveWrites(
      escrowId,
      {
        hostProgress: [{ address: 'gonka1a', nonce: max }],
        signatures: [{ nonce: max, signatures: [{ slotId: 0, signature: Uint8Array.of(1) }] }],
      },
      fencingToken,
    );
    const s = await store.load(escrowId);
    expect(s?.record).toStrictEqual(record);
    expect(s?.fencingToken).toBe(fencingToken);
    expect(s?.hostSync.get('gonka1a')).toBe(max);
    expect([...(await store.loadSignatures(escrowId, max)).keys()]).toEqual([0]);
  });
});
