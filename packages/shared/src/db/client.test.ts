import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import { openPlainPool, postgresTarget } from './client.js';

describe('postgresTarget', () => {
  it('turns a host directory into the socket path and drops it from the URL', () => {
    expect(
      postgresTarget('postgres://gw:pw@localhost:5433/gw?host=/var/run/postgresql/&sslmode=disable'),
    ).toEqual({
      url: 'postgres://gw:pw@localhost:5433/gw?sslmode=disable',
      path: '/var/run/postgresql/.s.PGSQL.5433',
    });
    expect(postgresTarget('postgres://localhost/gw?host=/tmp').path).toBe('/tmp/.s.PGSQL.5432');
  });

  it('leaves a TCP URL alone, and a host parameter that is not a directory', () => {
    for (const url of ['postgres://postgres@127.0.0.1:5432/gw', 'postgres://db/gw?host=db2']) {
      expect(postgresTarget(url)).toEqual({ url });
    }
  });
});

// The server of TEST_DATABASE_URL, reached through its Unix socket when this machine has one.
const SOCKET_DIR = '/var/run/postgresql';
describe('a pool on a Unix socket', () => {
  let database: TestDatabase;
  let socketUrl: URL;
  beforeAll(async () => {
    database = await createTestDatabase({ migrate: false });
    socketUrl = new URL(database.url);
    socketUrl.searchParams.set('host', SOCKET_DIR);
  });
  afterAll(async () => {
    await database?.drop();
  });

  it.skipIf(!existsSync(`${SOCKET_DIR}/.s.PGSQL.5432`))('queries the database of the URL', async () => {
    const sql = openPlainPool(socketUrl.toString(), { max: 1, applicationName: 'socket-test' });
    try {
      // inet_server_addr() is null on a Unix socket connection, an address over TCP.
      const [row] = await sql<{ db: string; addr: string | null }[]>`
        select current_database() as db, inet_server_addr()::text as addr`;
      expect(row).toEqual({ db: database.name, addr: null });
    } finally {
      await sql.end({ timeout: 5 });
    }
  });
});
