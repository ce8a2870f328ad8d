// The SessionStore contract (packages/devshard store-contract.ts, unchanged) against real Postgres,
// on a database of its own migrated like production.
import { sessionStoreContract } from '@gonka-gateway/devshard';
import { createTestDatabase, type TestDatabase } from '@gonka-gateway/shared/testing';
import postgres, { type Sql } from 'postgres';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { PostgresSessionStore } from './postgres-session-store.js';

let database: TestDatabase;
let sql: Sql<Record<string, never>>;
let store: PostgresSessionStore;

beforeAll(async () => {
  database = await createTestDatabase();
  // Enough connections that racing writers really run at once instead of queueing in the pool.
  sql = postgres(database.url, { max: 16, onnotice: () => {} });
  store = new PostgresSessionStore(sql);
});

afterAll(async () => {
  await sql?.end({ timeout: 5 });
  await database?.drop();
});

sessionStoreContract('postgres', () => store, { describe, it });
