import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropTestDatabase } from '@gonka-gateway/shared/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, startProcess, waitForHttp } from '../support/gateway-process.js';

const dbName = `gw_start_${randomBytes(5).toString('hex')}`;
afterAll(async () => {
  await dropTestDatabase(dbName);
});

describe('the README start command', () => {
  it('starts devnet, controller and proxy with working defaults and stops them all on SIGTERM', async () => {
    const db = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
    db.pathname = `/${dbName}`;
    const [proxyPort, controllerPort] = [await freePort(), await freePort()];
    const start = startProcess('deploy/src/start.ts', {
      DEVNET_PORTS: 'ephemeral',
      DEVSHARD_PORT: String(proxyPort),
      GATEWAY_CONTROLLER_PORT: String(controllerPort),
      DATABASE_URL: db.toString(),
      REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      REDIS_KEY_PREFIX: `gwstart:${randomBytes(4).toString('hex')}:`,
      // Every secret comes from the environment, so ./start writes no dev.env into the checkout.
      DEVSHARD_PRIVATE_KEY: randomBytes(32).toString('hex'),
      DEVSHARD_API_KEYS: `sk-${randomBytes(24).toString('hex')}`,
      DEVSHARD_ADMIN_API_KEY: `sk-admin-${randomBytes(24).toString('hex')}`,
      GATEWAY_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      DEVSHARD_STORAGE_DIR: mkdtempSync(join(tmpdir(), 'gw-start-')),
    });
    const status = await waitForHttp(`http://127.0.0.1:${proxyPort}/v1/status`, start, 200, 60_000);
    expect(await status.json()).toMatchObject({ status: 'ok', checks: { postgres: true, redis: true } });
    for (let i = 0; i < 100 && !start.output().includes('gateway ready on the devnet'); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(start.output()).toContain('gateway ready on the devnet');
    expect(await start.stop()).toBe(0);
    await expect(fetch(`http://127.0.0.1:${proxyPort}/v1/status`)).rejects.toThrow();
  });
});
