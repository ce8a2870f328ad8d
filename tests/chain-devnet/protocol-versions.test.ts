// A devnet whose approved_versions hold only a future runtime (`v6`): `gwctl params` and the proxy's
// GET /v1/status show the approved and the supported versions side by side (and that a new escrow
// binds to none), and `gwctl escrow create` refuses before it signs, naming both lists.
import { type Devnet, QWEN_MODEL } from '@gonka-gateway/devnet';
import { buildProxyApp } from '@gonka-gateway/proxy';
import { createMetricsRegistry, loadConfig } from '@gonka-gateway/shared';
import {
  createTestDatabase,
  createTestRedis,
  type TestDatabase,
  type TestRedis,
} from '@gonka-gateway/shared/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, errorLine, gwctl, startChainDevnet } from './harness.js';

const NAMED = 'the chain approves v6; this gateway speaks v5, v4, v3';

let devnet: Devnet;
beforeAll(async () => {
  devnet = await startChainDevnet({
    devshardHosts: false,
    params: (p) => {
      p.devshardEscrow.approvedVersions = [{ name: 'v6', binary: '', sha256: '' }];
    },
  });
});
afterAll(() => devnet?.close());

describe('protocol versions on a chain that approves only v6', () => {
  it('gwctl params shows both lists and that a new escrow binds to none', async () => {
    const text = await gwctl(devnet, ['params']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/approved by the chain\s+v6\n/);
    expect(text.stdout).toMatch(/supported by this gateway\s+v5, v4, v3\n/);
    expect(text.stdout).toContain(NAMED);
    const json = JSON.parse((await gwctl(devnet, ['--json', 'params'])).stdout);
    expect(json.protocol).toEqual({ approved: ['v6'], supported: ['v5', 'v4', 'v3'], bound: null });
  });

  it('gwctl escrow create refuses before signing anything', async () => {
    const creator = account(devnet, 'creator-0');
    const lastId = devnet.chain.lastEscrowId();
    const run = await gwctl(devnet, ['escrow', 'create', '--amount', '5000000000', '--model', QWEN_MODEL], {
      key: creator.key,
    });
    expect(run.code).toBe(1);
    expect(errorLine(run)).toContain(
      `not sent: no devshard protocol version this gateway supports is approved: ${NAMED}`,
    );
    expect(run.stdout).not.toMatch(/tx_hash/);
    expect(devnet.chain.lastEscrowId()).toBe(lastId);
  });

  describe('GET /v1/status', () => {
    let database: TestDatabase;
    let redis: TestRedis;
    beforeAll(async () => {
      [database, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
    });
    afterAll(() => Promise.all([database?.drop(), redis?.cleanup()]));

    it('shows the approved, supported and bound versions without waiting for the node', async () => {
      const config = loadConfig({
        DEVSHARD_ADMIN_API_KEY: `sk-admin-${'ab'.repeat(24)}`,
        DEVSHARDS_JSON: '[]',
        DEVSHARD_CHAIN_REST: devnet.urls.chainRest,
        DEVSHARD_PUBLIC_API: devnet.urls.node,
        REDIS_KEY_PREFIX: redis.prefix,
        DATABASE_URL: database.url,
        GATEWAY_REPLICA_ID: 'replica-versions',
      });
      const app = await buildProxyApp({
        config,
        infra: { database, redis: redis.redis },
        registry: createMetricsRegistry({ app: 'proxy', version: 'test' }),
      });
      try {
        const status = async () => (await app.inject({ method: 'GET', url: '/v1/status' })).json().protocol;
        // The first answer may come before the node's: the list is then unknown, never waited for.
        expect((await status()).supported).toEqual(['v5', 'v4', 'v3']);
        await expect.poll(status).toMatchObject({
          approved: ['v6'],
          supported: ['v5', 'v4', 'v3'],
          bound: null,
          approved_read_at: expect.any(String),
        });
      } finally {
        await app.close();
      }
    });
  });
});
