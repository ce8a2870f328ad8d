import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import { runMigrations } from './migrate.js';

const EXPECTED_TABLES = [
  'admin_audit_log',
  'api_keys',
  'chain_tx_commitments',
  'escrow_hosts',
  'escrows',
  'finalize_documents',
  'last_known_reads',
  'rotation_events',
  'rotation_stages',
  'rotation_suppressions',
  'session_diffs',
  'session_heads',
  'session_host_progress',
  'session_payloads',
  'session_pending_txs',
  'session_snapshots',
  'session_state_signatures',
  'settings',
  'usage_records',
  'usage_settings',
];

describe('migrations', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase({ migrate: false });
  });
  afterAll(async () => {
    await database.drop();
  });

  const tables = async () =>
    (
      await database.sql<{ table_name: string }[]>`
        select table_name from information_schema.tables where table_schema = 'public' order by table_name`
    ).map((r) => r.table_name);
  const applied = async () =>
    (await database.sql<{ n: string }[]>`select count(*)::text as n from drizzle.__drizzle_migrations`)[0]!.n;

  it('creates every table on an empty database', async () => {
    expect(await tables()).toEqual([]);
    await runMigrations(database.url);
    expect(await tables()).toEqual(EXPECTED_TABLES);
  });

  it('is a no-op when run again', async () => {
    const before = await applied();
    await runMigrations(database.url);
    expect(await applied()).toBe(before);
    expect(await tables()).toEqual(EXPECTED_TABLES);
  });

  it('enforces money as exact uint64 and known states', async () => {
    await database.sql`insert into escrows (escrow_id, chain_id, model_id, creator, amount, epoch_index, version, state, chain_row)
      values (18446744073709551615, 'c', 'm', 'gonka1x', 18446744073709551615, 1, 'v5', 'active', '{}')`;
    const [row] = await database.sql<{ amount: string }[]>`select amount::text from escrows`;
    expect(row!.amount).toBe('18446744073709551615');
    await expect(
      database.sql`insert into escrows (escrow_id, chain_id, model_id, creator, amount, epoch_index, version, state, chain_row)
        values (2, 'c', 'm', 'gonka1x', 1, 1, 'v5', 'bogus', '{}')`,
    ).rejects.toMatchObject({ code: '23514' });
    await expect(database.sql`insert into settings (id, default_request_max_tokens, request_max_tokens_cap, escrow_rotation, disabled)
      values (2, 1, 1, '{}', '{}')`).rejects.toMatchObject({ code: '23514' });
  });
});

describe('two controllers starting at once', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase({ migrate: false });
  });
  afterAll(async () => {
    await database.drop();
  });

  it('migrate exactly once, without errors', async () => {
    // Separate connections, as two processes would have; the advisory lock serialises them.
    await Promise.all([
      runMigrations(database.url),
      runMigrations(database.url),
      runMigrations(database.url),
    ]);
    const sql = postgres(database.url, { max: 1 });
    const [{ n }] = (await sql`select count(*)::int as n from drizzle.__drizzle_migrations`) as unknown as [
      { n: number },
    ];
    const files = (await import('node:fs'))
      .readdirSync(new URL('../../migrations', import.meta.url))
      .filter((f) => f.endsWith('.sql'));
    expect(n).toBe(files.length);
    await sql.end();
  });
});
