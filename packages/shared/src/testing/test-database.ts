import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { type Database, openDatabase } from '../db/client.js';
import { runMigrations } from '../db/migrate.js';
import { DEFAULT_TEST_DATABASE_URL } from './test-services.js';

export interface TestDatabase extends Database {
  url: string;
  name: string;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

function adminUrl(): string {
  return process.env.TEST_DATABASE_URL || DEFAULT_TEST_DATABASE_URL;
}

/** A fresh database on the test server, optionally migrated; each test file gets its own. */
export async function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const name = `gw_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name}"`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  if (options.migrate ?? true) await runMigrations(url.toString());
  const database = openDatabase(url.toString(), { max: 5, applicationName: name });
  return {
    ...database,
    url: url.toString(),
    name,
    async drop() {
      await database.close();
      await dropTestDatabase(name);
    },
  };
}

/** Drops a test database even while stray connections (a killed child process) still hold it. */
export async function dropTestDatabase(name: string): Promise<void> {
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
  } finally {
    await admin.end({ timeout: 5 });
  }
}
