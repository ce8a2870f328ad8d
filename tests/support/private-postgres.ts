// A private PostgreSQL server for tests that restart Postgres: its own data directory (initdb, trust
// auth), its own port, started as a child of the test (the `postgres` binary itself, so its pid is
// the server's), stopped with a fast shutdown and started again on the same port and data. The
// machine's own Postgres is never touched. PostgreSQL refuses to run as root: as root the server runs
// as the `postgres` system user. Unavailable (`privatePostgresAvailable()` false) without initdb.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@gonka-gateway/shared/testing';

export interface PrivatePostgres {
  /** postgres://postgres@127.0.0.1:<port>/<database> */
  url(database?: string): string;
  readonly port: number;
  /** The running server's pid (changes at each restart). */
  pid(): number;
  /** Fast shutdown (SIGINT: sessions are cut, nothing is lost), then the same server again. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

function binary(name: string): string | undefined {
  try {
    return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The uid/gid to run the server as: the current user, or `postgres` when running as root. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

export function privatePostgresAvailable(): boolean {
  if (!binary('initdb') || !binary('postgres')) return false;
  try {
    runAs();
    return true;
  } catch {
    return false;
  }
}

function ready(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (d: Buffer) => {
      out += String(d);
      if (out.includes('database system is ready to accept connections')) {
        child.stderr?.off('data', onData);
        resolve();
      }
    };
    child.stderr?.on('data', onData);
    child.once('exit', (code, signal) => reject(new Error(`postgres exited (${code ?? signal}):\n${out}`)));
  });
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const owner = runAs();
  const dir = mkdtempSync(join(tmpdir(), 'private-pg-'));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, 'data');
  const as = owner ? { uid: owner.uid, gid: owner.gid } : {};
  execFileSync(
    binary('initdb')!,
    ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions'],
    { stdio: 'pipe', cwd: dir, ...as },
  );
  const port = await freePort();
  let child: ChildProcess;
  let exited: Promise<unknown>;
  const launch = async () => {
    child = spawn(
      binary('postgres')!,
      [
        '-D',
        data,
        '-p',
        String(port),
        '-k',
        dir,
        '-c',
        'listen_addresses=127.0.0.1',
        // A test server: durability is not what is tested here.
        '-c',
        'fsync=off',
        '-c',
        'synchronous_commit=off',
        '-c',
        'full_page_writes=off',
        '-c',
        'max_connections=200',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], cwd: dir, ...as },
    );
    exited = once(child, 'exit');
    await ready(child);
    child.stderr?.resume();
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
    await exited;
  };
  await launch();
  return {
    port,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    pid: () => child.pid!,
    async restart() {
      await stop();
      await launch();
    },
    async stop() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
