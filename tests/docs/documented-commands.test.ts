// Every shell block of README.md and docs/operator-guide.md is a command the code accepts, so the
// docs cannot rot. Blocks are read from the Markdown; each runnable block runs, in document order
// and in one shell, against one gateway started with ./start (its port and data folder moved: the
// only edits made to the text); each must exit 0. A block marked `<!-- docs-test: skip: REASON -->`
// (Docker, a cluster, a second gateway) is not run but checked statically, as every block is: the
// gwctl commands exist, the HTTP paths are routes the gateway serves, the files under deploy/
// exist, the compose services named exist. The guide's log-marker table matches the markers the
// code logs.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildProgram } from '@gonka-gateway/cli';
import { dropTestDatabase } from '@gonka-gateway/shared/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { freePort, REPO_ROOT } from '../support/gateway-process.js';
import {
  alive,
  descendants,
  type RunningStart,
  runStart,
  waitForStartReady,
} from '../support/start-command.js';

const DOCS = ['README.md', 'docs/operator-guide.md'];
const SETUP_MARK = 'started by the test itself';

interface Block {
  doc: string;
  line: number;
  code: string;
  /** Why it is not run, or undefined. */
  skip?: string;
}

function shellBlocks(doc: string): Block[] {
  const lines = readFileSync(join(REPO_ROOT, doc), 'utf8').split('\n');
  const out: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(sh|bash|shell)\s*$/.test(lines[i]!)) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith('```'));
    const mark = /^<!-- docs-test: (.*) -->$/.exec(lines[i - 1] ?? '')?.[1];
    out.push({
      doc,
      line: i + 1,
      code: lines.slice(i + 1, end).join('\n'),
      ...(mark ? { skip: mark } : {}),
    });
    i = end;
  }
  return out;
}

const blocks = DOCS.flatMap(shellBlocks);
const where = (b: Block) => `${b.doc}:${b.line}`;

/** Route patterns the gateway serves (proxy and controller), read from their sources. */
function gatewayRoutes(): RegExp[] {
  const patterns = new Set<string>();
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) {
        for (const m of readFileSync(p, 'utf8').matchAll(/'(\/(?:v1|devshard)\/[^'\s]*)'/g))
          patterns.add(m[1]!);
      }
    }
  };
  for (const app of ['apps/proxy/src', 'apps/controller/src']) walk(join(REPO_ROOT, app));
  return [...patterns].map(
    (p) =>
      new RegExp(
        `^${p
          .replace(/[.]/g, '\\.')
          .replace(/:[A-Za-z_]+/g, '[^/]+')
          .replace(/\*/g, '.*')}$`,
      ),
  );
}

/** gwctl command paths used in a block: `pnpm gwctl admin settle 3` → ['admin', 'settle']. */
function gwctlCommands(code: string): string[][] {
  return [...code.matchAll(/pnpm gwctl((?: [a-z][a-z-]*)+)/g)].map((m) => m[1]!.trim().split(' '));
}

function knownCommand(path: string[]): boolean {
  let command: ReturnType<typeof buildProgram> = buildProgram({
    env: {},
    stdout: { write: () => true },
    stderr: { write: () => true },
  });
  for (const [i, name] of path.entries()) {
    const next = command.commands.find((c) => c.name() === name);
    if (!next) return i > 0 && command.registeredArguments.length > 0; // an argument, not a command
    command = next;
  }
  return true;
}

describe('documented shell commands: static checks', () => {
  const routes = gatewayRoutes();

  it('finds the blocks, and every skipped block says why', () => {
    expect(blocks.filter((b) => b.doc === 'README.md').length).toBeGreaterThanOrEqual(4);
    expect(blocks.filter((b) => b.doc === 'docs/operator-guide.md').length).toBeGreaterThanOrEqual(8);
    for (const b of blocks.filter((x) => x.skip)) {
      expect(b.skip, where(b)).toMatch(new RegExp(`^(skip: .{10,}|${SETUP_MARK} .{10,})$`));
    }
  });

  it('every gwctl command exists', () => {
    for (const b of blocks) {
      for (const path of gwctlCommands(b.code))
        expect(knownCommand(path), `gwctl ${path.join(' ')} (${where(b)})`).toBe(true);
    }
  });

  it('every HTTP path is a route the gateway serves', () => {
    expect(routes.length).toBeGreaterThan(10);
    for (const b of blocks) {
      for (const m of b.code.matchAll(/(?:127\.0\.0\.1:18080|\$OLD|\$NEW)(\/[^\s"'?\\]*)/g)) {
        const path = m[1]!.replace(/\$[A-Z_]+/g, '1');
        expect(
          routes.some((r) => r.test(path)),
          `${path} (${where(b)})`,
        ).toBe(true);
      }
    }
  });

  it('files under deploy/ exist, and docker compose names only services of deploy/compose.yaml', () => {
    const services = Object.keys(
      parse(readFileSync(join(REPO_ROOT, 'deploy/compose.yaml'), 'utf8'), { merge: true }).services,
    );
    for (const b of blocks) {
      for (const m of b.code.matchAll(/\bdeploy\/[A-Za-z0-9_./-]+/g)) {
        const path = m[0].replace(/\.env$/, '.env.example');
        expect(
          existsSync(join(REPO_ROOT, path)) || path.endsWith('.devshardctl'),
          `${m[0]} (${where(b)})`,
        ).toBe(true);
      }
      for (const m of b.code.matchAll(
        /docker compose -f deploy\/compose\.yaml (exec -T|exec|stop|start) ((?:[a-z0-9]+ ?)+)/g,
      )) {
        const named = m[1]!.startsWith('exec') ? [m[2]!.split(' ')[0]!] : m[2]!.trim().split(' ');
        for (const s of named) expect(services, `${s} (${where(b)})`).toContain(s);
      }
    }
  });

  it("the guide's log markers are the ones the code logs", () => {
    const guide = readFileSync(join(REPO_ROOT, 'docs/operator-guide.md'), 'utf8');
    const documented = [...guide.matchAll(/^\| `([a-z_*]+)` \|/gm)]
      .map((m) => m[1]!)
      .filter((n) => /^(escrow|controller|pool|node)_/.test(n));
    const logged = new Set<string>();
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory() && e.name !== 'node_modules' && e.name !== 'dist') walk(p);
        else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) {
          for (const m of readFileSync(p, 'utf8').matchAll(/marker: '([a-z_]+)'/g)) logged.add(m[1]!);
        }
      }
    };
    for (const dir of ['apps', 'packages']) walk(join(REPO_ROOT, dir));
    const matches = (pattern: string, name: string) =>
      new RegExp(`^${pattern.replace('*', '.*')}$`).test(name);
    for (const name of logged)
      expect(
        documented.some((d) => matches(d, name)),
        `${name} is logged but not in the guide`,
      ).toBe(true);
    for (const d of documented.filter((x) => !x.includes('*')))
      expect(logged.has(d), `${d} is documented but never logged`).toBe(true);
  });
});

describe('documented shell commands: run against ./start', () => {
  const dbName = `gw_docs_${randomBytes(5).toString('hex')}`;
  const restoredDb = `gw_docs_restored_${randomBytes(4).toString('hex')}`;
  const workDir = mkdtempSync(join(tmpdir(), 'gw-docs-'));
  const dataDir = join(workDir, 'gateway-data');
  let start: RunningStart;
  let gatewayPort: number;
  let databaseUrl: string;
  let out: string;

  beforeAll(async () => {
    const db = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
    db.pathname = `/${dbName}`;
    databaseUrl = db.toString();
    gatewayPort = await freePort();
    start = runStart({
      DEVNET_PORTS: 'ephemeral',
      DEVNET_BLOCK_INTERVAL_MS: '100',
      START_DATA_DIR: dataDir,
      START_GATEWAY_PORT: String(gatewayPort),
      DEVSHARD_PORT: String(await freePort()),
      START_SECOND_PROXY_PORT: String(await freePort()),
      GATEWAY_CONTROLLER_PORT: String(await freePort()),
      DATABASE_URL: databaseUrl,
      REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      REDIS_KEY_PREFIX: `gwdocs:${randomBytes(4).toString('hex')}:`,
      CI: 'true',
    });
    out = await waitForStartReady(start);
  }, 180_000);

  afterAll(async () => {
    if (start) {
      const kids = descendants(start.child.pid!);
      await start.interrupt();
      for (let i = 0; i < 100 && kids.some(alive); i++) await new Promise((r) => setTimeout(r, 100));
    }
    await dropTestDatabase(dbName);
    await dropTestDatabase(restoredDb);
    rmSync(workDir, { recursive: true, force: true });
  }, 60_000);

  it('every runnable block exits 0, in document order, in one shell', async () => {
    const runnable = blocks.filter((b) => !b.skip);
    const gwctlScript: string = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).scripts
      .gwctl;
    expect(gwctlScript).toMatch(/apps\/cli\/src\/main\.ts/);
    const edit = (code: string) =>
      code
        .replaceAll('127.0.0.1:18080', `127.0.0.1:${gatewayPort}`)
        .replaceAll('.gateway-data/', `${dataDir}/`)
        .replaceAll('gonka_gateway_restored', restoredDb);
    const script = [
      'set -euo pipefail',
      // gwctl from the checkout, while the commands run in a scratch folder (backups land there).
      // `pnpm gwctl` runs the root package.json's gwctl script as pnpm runs a script (in the
      // checkout, its node_modules/.bin first on PATH), without pnpm's own start-up for each of the
      // documented commands; anything else goes to pnpm itself.
      `gwctl_script=${JSON.stringify(gwctlScript)}`,
      `pnpm() {
        if [ "$1" = gwctl ]; then
          shift
          (cd ${JSON.stringify(REPO_ROOT)} && PATH=${JSON.stringify(join(REPO_ROOT, 'node_modules/.bin'))}:"$PATH" eval "$gwctl_script \\"\\$@\\"")
        else
          command pnpm --silent --dir ${JSON.stringify(REPO_ROOT)} "$@"
        fi
      }`,
      ...runnable.map((b) => `echo "@@block ${where(b)}"\n${edit(b.code)}`),
      'echo "@@done"',
    ].join('\n');
    const devnet = {
      chainRest: /chain REST (http:\/\/\S+),/.exec(out)![1]!,
      rpc: /RPC (http:\/\/\S+),/.exec(out)![1]!,
      node: /node (http:\/\/\S+)\n/.exec(out)![1]!,
    };
    const shell = spawn('bash', ['-c', script], {
      cwd: workDir,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/root',
        // Where this test's gateway and devnet are (the documented defaults are taken by others).
        GATEWAY_URL: `http://127.0.0.1:${gatewayPort}`,
        DEVSHARD_CHAIN_REST: devnet.chainRest,
        DEVSHARD_PUBLIC_API: devnet.node,
        NODE_RPC: devnet.rpc,
        DATABASE_URL: databaseUrl,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    shell.stdout.on('data', (d: Buffer) => (text += String(d)));
    shell.stderr.on('data', (d: Buffer) => (text += String(d)));
    const [code] = await once(shell, 'exit');
    const failedIn = [...text.matchAll(/@@block (\S+)/g)].pop()?.[1];
    expect(code, `the block at ${failedIn} failed:\n${text}`).toBe(0);
    expect(text).toContain('@@done');
    // What the quick start promises: one escrow by curl, the next by gwctl, settled; disabled → 308.
    // (Their ids follow the demo's escrows: one per proxy replica that ./start runs.)
    const byCurl = /"escrow_id":(\d+)/.exec(text)?.[1];
    const byGwctl = /escrow_id: (\d+)/.exec(text)?.[1];
    expect(byCurl, text).toBeDefined();
    expect(byGwctl).toBe(String(Number(byCurl) + 1));
    expect(text).toContain(`escrow ${byGwctl} settled`);
    expect(text).toMatch(/(^|[^0-9])308\n/);
    const states = JSON.parse(
      execFileSync('pnpm', ['--silent', 'gwctl', '--json', 'admin', 'devshards'], {
        cwd: REPO_ROOT,
        env: {
          ...process.env,
          GATEWAY_URL: `http://127.0.0.1:${gatewayPort}`,
          DEVSHARD_ADMIN_API_KEY: readFileSync(join(dataDir, 'dev.env'), 'utf8').match(
            /^DEVSHARD_ADMIN_API_KEY=(.*)$/m,
          )![1]!,
        },
        encoding: 'utf8',
      }),
    ) as { escrow_id: number; state: string }[];
    expect(states.find((e) => e.escrow_id === Number(byGwctl))?.state).toBe('settled');
    expect(['settling', 'settled']).toContain(states.find((e) => e.escrow_id === Number(byCurl))?.state);
  }, 240_000);
});
