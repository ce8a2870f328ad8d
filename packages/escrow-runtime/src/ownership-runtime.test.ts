// A replica while Redis is down: the runtime's Redis commands time out instead of
// queueing until Redis returns, so the claim loop keeps running its passes (each failure logged and
// retried), close() returns, and once Redis is back every escrow is owned again. Real Postgres, a
// private redis-server stopped and restarted on the same port, sessions on the in-memory store (no
// requests are served here).
import { PrivateKey } from '@gonka-gateway/chain';
import { InMemorySessionStore } from '@gonka-gateway/devshard/session';
import { closeRedis, openRedis, type RedisKeys, redisKeys } from '@gonka-gateway/shared';
import { createTestDatabase, type TestDatabase } from '@gonka-gateway/shared/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OwnershipRuntime } from './ownership-runtime.js';
import { insertEscrowRows } from './testing/escrow-rows.js';
import { type PrivateRedis, startPrivateRedis } from './testing/redis-server.js';
import { twoSlotSessionRecord } from './testing/session-record.js';

const TTL = 600;
const creator = PrivateKey.fromHex('64'.padStart(64, '0'));
const host = PrivateKey.fromHex('01'.padStart(64, '0'));
const ESCROWS = [1n, 2n];

let db: TestDatabase;
let server: PrivateRedis;
let redis: Redis;
let keys: RedisKeys;

const record = (escrowId: bigint) => twoSlotSessionRecord(escrowId, creator, host);

beforeAll(async () => {
  [db, server] = await Promise.all([createTestDatabase(), startPrivateRedis()]);
  redis = openRedis(server.url);
  keys = redisKeys('runtime-test:');
  await insertEscrowRows(
    db.sql,
    ESCROWS.map((escrowId) => ({ escrowId, modelId: 'm1', creator: creator.address })),
  );
});

afterAll(async () => {
  await closeRedis(redis);
  await Promise.all([db.drop(), server.stop()]);
});

describe('ownership runtime while Redis is down', () => {
  it('keeps running claim passes, closes, and owns every escrow again once Redis is back', async () => {
    const store = new InMemorySessionStore();
    for (const id of ESCROWS) await store.create(record(id));
    const failures: string[] = [];
    const log = {
      info: () => {},
      error: () => {},
      warn: (...args: unknown[]) => void failures.push(String(args[1])),
    };
    const runtime = new OwnershipRuntime({
      sql: db.sql,
      redis,
      keys,
      replicaId: 'r1',
      url: 'http://r1',
      leaseTtlMs: TTL,
      store,
      signerFor: () => creator,
      resolveHost: () => undefined,
      log,
    });
    const serving = () => runtime.sessions.list().filter((e) => e.state === 'serving').length;
    const passFailures = () => failures.filter((m) => m === 'ownership background task failed').length;
    await runtime.start();
    try {
      await expect.poll(serving, { timeout: 10_000 }).toBe(ESCROWS.length);

      await server.stop();
      // Passes keep failing and being retried (each one logged), and the leases lapse on time.
      const before = passFailures();
      await expect.poll(passFailures, { timeout: 10_000 }).toBeGreaterThan(before + 3);
      await expect.poll(() => runtime.sessions.owned().size, { timeout: 10_000 }).toBe(0);

      server = await startPrivateRedis({ port: server.port });
      await expect.poll(serving, { timeout: TTL + 10_000 }).toBe(ESCROWS.length);
      const leases = await redis.mget(...ESCROWS.map((id) => keys.escrowLease(id)));
      expect(leases.every((v) => v?.startsWith('r1:'))).toBe(true);

      // Redis down again: close() (claim loop stop, directory leave, drains) still returns.
      await server.stop();
    } finally {
      await runtime.close();
    }
    server = await startPrivateRedis({ port: server.port });
  }, 60_000);
});
