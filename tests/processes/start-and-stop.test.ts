import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { dropTestDatabase } from '@gonka-gateway/shared/testing';
import postgres from 'postgres';
import { afterAll, describe, it } from 'vitest';
import { freePort, REPO_ROOT, startProcess, waitForHttp } from '../support/gateway-process.js';

const ADMIN = `sk-admin-${'ab'.repeat(24)}`;
const PRIVATE_KEY = '10af8dc1f63fb90cfa39943a5afbf262cd84f24919e7d05653e3b03313e685ce';
const PROXY = 'apps/proxy/src/main.ts';
const CONTROLLER = 'apps/controller/src/main.ts';
const testDbServer = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const testRedis = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const createdDatabases: string[] = [];

/** A database URL on the test server whose database does not exist yet. */
function freshDatabaseUrl(): string {
  const name = `gw_proc_${randomBytes(5).toString('hex')}`;
  createdDatabases.push(name);
  const url = new URL(testDbServer);
  url.pathname = `/${name}`;
  return url.toString();
}

const baseEnv = () => ({
  DEVSHARD_ADMIN_API_KEY: ADMIN,
  DEVSHARDS_JSON: '[]',
  DATABASE_URL: freshDatabaseUrl(),
  REDIS_URL: testRedis,
  REDIS_KEY_PREFIX: `gwproc:${randomBytes(4).toString('hex')}:`,
});

afterAll(async () => {
  await Promise.all(createdDatabases.map(dropTestDatabase));
});

// Every test here starts its own processes on its own database, Redis prefix and ports, and most of
// a test's time is a process starting up: the tests of each group run at the same time (with room
// for the slower starts that brings on a busy machine).
describe.concurrent('configuration errors stop the process with one line', { timeout: 60_000 }, () => {
  it.for([PROXY, CONTROLLER])(
    '%s exits when neither DEVSHARDS_JSON nor DEVSHARD_ESCROW_ID is set',
    async (entry, { expect }) => {
      const proc = startProcess(entry, { DEVSHARD_ADMIN_API_KEY: ADMIN });
      expect(await proc.exited).toBe(78);
      expect(proc.output().trim()).toBe(
        'configuration error: neither DEVSHARDS_JSON nor DEVSHARD_ESCROW_ID is set: set DEVSHARDS_JSON=[] for multi-escrow mode, or DEVSHARD_ESCROW_ID=<id> for single-escrow mode',
      );
    },
  );

  it('names a bad private key without printing it', async ({ expect }) => {
    const bad = `0x${PRIVATE_KEY}`;
    const proc = startProcess(PROXY, { ...baseEnv(), DEVSHARD_PRIVATE_KEY: bad });
    expect(await proc.exited).toBe(78);
    expect(proc.output()).toContain('DEVSHARD_PRIVATE_KEY must be 64 hex characters without a 0x prefix');
    expect(proc.output()).not.toContain(PRIVATE_KEY.slice(0, 12));
  });

  it('reports an unreachable Redis without credentials', async ({ expect }) => {
    const env = {
      ...baseEnv(),
      DATABASE_URL: testDbServer,
      REDIS_URL: 'redis://:s3cretpassw0rd@127.0.0.1:1',
    };
    const proc = startProcess(PROXY, env);
    expect(await proc.exited).toBe(69);
    expect(proc.output()).toContain('startup error: Redis at 127.0.0.1:1 did not answer');
    expect(proc.output()).not.toContain('s3cretpassw0rd');
  });

  it('tells the operator to start the controller when the database does not exist yet', async ({
    expect,
  }) => {
    const proc = startProcess(PROXY, baseEnv());
    expect(await proc.exited).toBe(69);
    expect(proc.output()).toContain('the database does not exist yet; start the controller');
  });
});

describe.concurrent('controller and proxy', { timeout: 60_000 }, () => {
  it('start on a fresh database, serve status and metrics, and exit 0 on SIGTERM', async ({ expect }) => {
    const env = {
      ...baseEnv(),
      DEVSHARD_PORT: String(await freePort()),
      GATEWAY_CONTROLLER_PORT: String(await freePort()),
    };
    const controller = startProcess(CONTROLLER, env);
    await waitForHttp(`http://127.0.0.1:${env.GATEWAY_CONTROLLER_PORT}/internal/health`, controller);
    const proxy = startProcess(PROXY, env);
    const status = await waitForHttp(`http://127.0.0.1:${env.DEVSHARD_PORT}/v1/status`, proxy);
    expect(await status.json()).toMatchObject({
      status: 'ok',
      mode: 'pool',
      checks: { postgres: true, redis: true },
    });
    const metrics = await (await fetch(`http://127.0.0.1:${env.DEVSHARD_PORT}/metrics`)).text();
    expect(metrics).toContain('devshard_gateway_build_info{app="proxy"');
    const controllerMetrics = await (
      await fetch(`http://127.0.0.1:${env.GATEWAY_CONTROLLER_PORT}/metrics`)
    ).text();
    expect(controllerMetrics).toContain('devshard_gateway_build_info{app="controller"');

    expect(await proxy.stop()).toBe(0);
    expect(await controller.stop()).toBe(0);
    expect(proxy.output()).toContain('shutdown complete');
    expect(controller.output()).toContain('shutdown complete');
    expect(controller.output()).not.toContain(ADMIN);
  });

  it('two controllers starting at once migrate the database once', async ({ expect }) => {
    const env = baseEnv();
    const ports = [await freePort(), await freePort()];
    const controllers = ports.map((p) =>
      startProcess(CONTROLLER, { ...env, GATEWAY_CONTROLLER_PORT: String(p) }),
    );
    await Promise.all(
      controllers.map((c, i) => waitForHttp(`http://127.0.0.1:${ports[i]}/internal/health`, c)),
    );
    const sql = postgres(env.DATABASE_URL, { max: 1 });
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`;
    const [settingsRows] = await sql<{ n: number }[]>`select count(*)::int as n from settings`;
    await sql.end();
    const files = readdirSync(`${REPO_ROOT}/packages/shared/migrations`).filter((f) => f.endsWith('.sql'));
    expect(row!.n).toBe(files.length);
    expect(settingsRows!.n).toBe(1);
    const codes = await Promise.all(controllers.map((c) => c.stop()));
    expect(codes).toEqual([0, 0]);
  });
});
