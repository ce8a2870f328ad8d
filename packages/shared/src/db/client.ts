import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import postgres, { type Options, type Sql } from 'postgres';
import * as schema from './schema.js';

export type GatewayDb = PostgresJsDatabase<typeof schema>;

export interface Database {
  sql: Sql;
  db: GatewayDb;
  close(): Promise<void>;
}

export function openDatabase(
  url: string,
  options: { max?: number; applicationName?: string } = {},
): Database {
  const sql = openPlainPool(url, {
    max: options.max ?? 10,
    applicationName: options.applicationName ?? 'gonka-gateway',
  });
  return { sql, db: drizzle(sql, { schema }), close: () => sql.end({ timeout: 5 }) };
}

/**
 * postgres.js's URL and options for a DATABASE_URL. A `host` query parameter that is a directory
 * (libpq's form, `postgres://user@localhost/db?host=/var/run/postgresql`) means the server's Unix
 * socket in it: postgres.js reads only the URL's host, and would send `host` to the server as a
 * setting it rejects. A Unix socket costs the proxy less kernel time per query than TCP loopback
 * (apps/proxy/README.md, "Postgres and Redis over Unix sockets").
 */
export function postgresTarget(url: string): { url: string; path?: string } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { url };
  }
  const dir = parsed.searchParams.get('host');
  if (!dir?.startsWith('/')) return { url };
  parsed.searchParams.delete('host');
  const port = parsed.port || '5432';
  return { url: parsed.toString(), path: `${dir.replace(/\/+$/, '')}/.s.PGSQL.${port}` };
}

/** postgres(url, options) through postgresTarget: DATABASE_URL may name a Unix socket directory. */
export function connectPostgres(url: string, options: Options<Record<string, never>>): Sql {
  const target = postgresTarget(url);
  return postgres(target.url, target.path ? { ...options, path: target.path } : options);
}

/**
 * A postgres.js pool of its own, never handed to drizzle: drizzle replaces the json and timestamp
 * serializers of the handle it wraps, which the session store and the raw SQL of the apps rely on.
 */
export function openPlainPool(url: string, options: { max: number; applicationName: string }): Sql {
  return connectPostgres(url, {
    max: options.max,
    // Notices such as "schema already exists" are noise; errors still throw.
    onnotice: () => {},
    connection: { application_name: options.applicationName },
  });
}

/** SQLSTATE of a postgres.js error, to branch on codes rather than text. */
export function sqlState(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err
    ? String((err as { code: unknown }).code)
    : undefined;
}

/**
 * Creates the database named in `url` when it does not exist yet (a fresh machine), connecting to
 * the server's `postgres` maintenance database. Safe when several processes race to create it.
 */
export async function ensureDatabaseExists(url: string): Promise<void> {
  const probe = connectPostgres(url, { max: 1, onnotice: () => {} });
  try {
    await probe`select 1`;
    return;
  } catch (err) {
    if (sqlState(err) !== '3D000') throw err;
  } finally {
    await probe.end({ timeout: 5 });
  }
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  const maintenance = new URL(url);
  maintenance.pathname = '/postgres';
  const admin = connectPostgres(maintenance.toString(), { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name.replace(/"/g, '""')}"`);
  } catch (err) {
    // A concurrent starter won the race: 42P04 if its create had committed, 23505 (pg_database's
    // unique index) if both creates ran at the same instant.
    const state = sqlState(err);
    if (state !== '42P04' && state !== '23505') throw err;
  } finally {
    await admin.end({ timeout: 5 });
  }
}
