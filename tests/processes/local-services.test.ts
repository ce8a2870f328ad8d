// scripts/local-services.sh decides, for PostgreSQL and Redis, between leaving them alone, starting
// them, installing them from the distribution's packages, or printing the one command that does.
// The probes and `run` are shell functions: each case sources the real script in a real bash,
// replaces the probes with the situation under test and `run` with a recorder, so no case installs,
// starts or removes anything on this machine.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/gateway-process.js';

interface Situation {
  /** Ports that answer. */
  open?: number[];
  installed?: ('postgres' | 'redis')[];
  /** Commands on PATH (apt-get, brew, sudo). */
  commands?: string[];
  root?: boolean;
  sudo?: boolean;
  env?: Record<string, string>;
}

/** Runs ensure_postgres and ensure_redis in the situation; returns what they ran and said. */
function bootstrap(s: Situation): { ran: string[]; said: string[] } {
  const fn = (name: string, ok: boolean) => `${name}() { return ${ok ? 0 : 1}; }`;
  const script = [
    'set -euo pipefail',
    'exec 2>&1',
    'source scripts/local-services.sh',
    `port_open() { case " ${(s.open ?? []).join(' ')} " in *" $1 "*) return 0;; *) return 1;; esac; }`,
    // A started service answers at once; an installed one is then found by the start step.
    'wait_port() { return 0; }',
    `have() { case " ${(s.commands ?? []).join(' ')} " in *" $1 "*) return 0;; *) return 1;; esac; }`,
    fn('postgres_installed', s.installed?.includes('postgres') ?? false),
    fn('redis_installed', s.installed?.includes('redis') ?? false),
    fn('is_root', s.root ?? false),
    fn('can_sudo', s.sudo ?? false),
    'ls() { echo 15; }',
    'run() { echo "RUN $*" >&2; }',
    'ensure_postgres',
    'ensure_redis',
  ].join('\n');
  const output = execFileSync('bash', ['-c', script], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', ...s.env },
    encoding: 'utf8',
  });
  const lines = output.trim().split('\n').filter(Boolean);
  return {
    ran: lines.filter((l) => l.startsWith('RUN ')).map((l) => l.slice(4)),
    said: lines.filter((l) => l.startsWith('==> ')).map((l) => l.slice(4)),
  };
}

describe('scripts/local-services.sh', () => {
  it('leaves answering services alone, CI or not', () => {
    for (const env of [{}, { CI: 'true' }] as Record<string, string>[]) {
      expect(bootstrap({ open: [5432, 6379], commands: ['apt-get'], root: true, env })).toEqual({
        ran: [],
        said: [],
      });
    }
  });

  it('starts installed but stopped services without installing anything', () => {
    const r = bootstrap({
      installed: ['postgres', 'redis'],
      commands: ['apt-get'],
      root: true,
      env: { CI: 'true' },
    });
    expect(r.ran).toEqual([
      'pg_ctlcluster --skip-systemctl-redirect 15 main start',
      'redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save  --appendonly no',
    ]);
    expect(r.ran.join('\n')).not.toMatch(/apt-get/);
  });

  it('installs missing services from the distribution as root (also under CI, because they are missing), then starts them', () => {
    for (const env of [{}, { CI: 'true' }] as Record<string, string>[]) {
      const r = bootstrap({ commands: ['apt-get'], root: true, env });
      expect(r.ran).toEqual([
        'apt-get update -q',
        'env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql',
        'sed -i 1i host all postgres 127.0.0.1/32 trust\\nhost all postgres ::1/128 trust /etc/postgresql/15/main/pg_hba.conf',
        'pg_ctlcluster --skip-systemctl-redirect 15 main start',
        'apt-get update -q',
        'env DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server',
        'redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save  --appendonly no',
      ]);
      expect(r.said[0]).toMatch(/installing PostgreSQL from the distribution's packages/);
    }
  });

  it('uses passwordless sudo when not root', () => {
    const r = bootstrap({ open: [5432], commands: ['apt-get', 'sudo'], sudo: true });
    expect(r.ran).toEqual([
      'sudo -n apt-get update -q',
      'sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server',
      'sudo -n redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save  --appendonly no',
    ]);
  });

  it('without privilege or without apt, prints the one command that installs each, and runs nothing', () => {
    const apt = bootstrap({ commands: ['apt-get', 'sudo'] });
    expect(apt.ran).toEqual([]);
    expect(apt.said).toEqual([
      'PostgreSQL is not answering on 127.0.0.1:5432 and cannot be installed from here; install it with: sudo apt-get install -y postgresql',
      'Redis is not answering on 127.0.0.1:6379 and cannot be installed from here; install it with: sudo apt-get install -y redis-server',
    ]);
    const brew = bootstrap({ commands: ['brew'], root: true });
    expect(brew.ran).toEqual([]);
    expect(brew.said.join('\n')).toContain('brew install postgresql@15 && brew services start postgresql@15');
    expect(brew.said.join('\n')).toContain('brew install redis && brew services start redis');
    const bare = bootstrap({ root: true });
    expect(bare.said.join('\n')).toContain('docker run -d --name gateway-postgres');
  });

  it('leaves Postgres and Redis to the operator when their URLs are set', () => {
    const r = bootstrap({
      commands: ['apt-get'],
      root: true,
      env: { DATABASE_URL: 'postgres://db.internal/gw', TEST_REDIS_URL: 'redis://cache.internal:6379' },
    });
    expect(r).toEqual({ ran: [], said: [] });
  });
});
