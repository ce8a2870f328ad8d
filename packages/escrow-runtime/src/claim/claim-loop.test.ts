// Claiming against real Postgres and a private redis-server, with a target that only takes leases
// (the sessions are exercised by the multi-process tests in tests/ownership/).
import { closeRedis, openRedis, type RedisKeys, redisKeys } from '@gonka-gateway/shared';
import { createTestDatabase, type TestDatabase } from '@gonka-gateway/shared/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EscrowLease } from '../lease/escrow-lease.js';
import { insertEscrowRows, setEscrowState } from '../testing/escrow-rows.js';
import { type PrivateRedis, startPrivateRedis } from '../testing/redis-server.js';
import type { ActiveEscrow } from './active-escrows.js';
import { ClaimLoop, type ClaimTarget } from './claim-loop.js';
import { ReplicaDirectory } from './replica-directory.js';

const TTL = 600;
let db: TestDatabase;
let server: PrivateRedis;
let redis: Redis;
let keys: RedisKeys;

class LeaseOnlyReplica implements ClaimTarget {
  readonly leases = new Map<bigint, EscrowLease>();
  readonly models = new Map<bigint, string>();
  readonly directory: ReplicaDirectory;
  readonly loop: ClaimLoop;

  constructor(readonly id: string) {
    this.directory = new ReplicaDirectory({ redis, keys, replicaId: id, url: `http://${id}`, ttlMs: TTL });
    this.loop = new ClaimLoop({
      sql: db.sql,
      redis,
      keys,
      directory: this.directory,
      target: this,
      everyMs: TTL / 3,
      overdueAfterMs: TTL,
    });
  }

  async start() {
    await this.directory.start();
    this.loop.start();
  }

  async stop() {
    await this.loop.stop();
    await this.directory.stop();
    await Promise.all([...this.leases.keys()].map((id) => this.drain(id)));
  }

  owned() {
    return new Set(this.leases.keys());
  }

  async claim(escrow: ActiveEscrow) {
    const id = escrow.escrowId;
    const lease = await EscrowLease.acquire({
      redis,
      keys,
      escrowId: id,
      replicaId: this.id,
      ttlMs: TTL,
      onLost: () => this.leases.delete(id),
    });
    if (!lease) return false;
    this.leases.set(id, lease);
    this.models.set(id, escrow.modelId);
    return true;
  }

  async drain(id: bigint) {
    const lease = this.leases.get(id);
    this.leases.delete(id);
    await lease?.release();
  }

  count(model: string) {
    return [...this.leases.keys()].filter((id) => this.models.get(id) === model).length;
  }
}

/** Every active escrow is leased in Redis by one of `replicas`, and each holds at most its share. */
async function balanced(replicas: LeaseOnlyReplica[], perModel: Record<string, number>): Promise<boolean> {
  const total = Object.values(perModel).reduce((a, b) => a + b, 0);
  const owned = replicas.reduce((n, r) => n + r.leases.size, 0);
  if (owned !== total) return false;
  for (const [model, n] of Object.entries(perModel)) {
    const share = Math.ceil(n / replicas.length);
    if (replicas.some((r) => r.count(model) > share)) return false;
  }
  const values = await redis.mget(...[...Array(total).keys()].map((i) => keys.escrowLease(BigInt(i + 1))));
  return values.every((v) => v !== null);
}

beforeAll(async () => {
  [db, server] = await Promise.all([createTestDatabase(), startPrivateRedis()]);
  redis = openRedis(server.url);
  keys = redisKeys('claim-test:');
  await insertEscrowRows(db.sql, [
    ...[1, 2, 3, 4].map((i) => ({ escrowId: BigInt(i), modelId: 'm1' })),
    ...[5, 6, 7].map((i) => ({ escrowId: BigInt(i), modelId: 'm2' })),
    { escrowId: 8n, modelId: 'm1', state: 'settled' },
    { escrowId: 9n, modelId: 'm1', active: false },
  ]);
});

afterAll(async () => {
  await closeRedis(redis);
  await Promise.all([db.drop(), server.stop()]);
});

describe('claim loop', () => {
  it('balances ownership per model across live replicas, re-owns everything after FLUSHALL, and hands back a draining escrow', async () => {
    const a = new LeaseOnlyReplica('a');
    const b = new LeaseOnlyReplica('b');
    await a.start();
    await b.start();
    try {
      await expect.poll(() => balanced([a, b], { m1: 4, m2: 3 }), { timeout: 10_000 }).toBe(true);
      // Never the settled or deactivated escrows.
      expect(await redis.exists(keys.escrowLease(8n), keys.escrowLease(9n))).toBe(0);

      // A third replica joins: the others hand escrows over until the shares of three hold.
      const c = new LeaseOnlyReplica('c');
      await c.start();
      try {
        await expect.poll(() => balanced([a, b, c], { m1: 4, m2: 3 }), { timeout: 10_000 }).toBe(true);
        expect(c.leases.size).toBeGreaterThan(0);

        // Redis loses everything (leases and the directory): every escrow is owned again.
        await redis.flushall();
        await expect.poll(() => balanced([a, b, c], { m1: 4, m2: 3 }), { timeout: TTL + 5_000 }).toBe(true);
      } finally {
        await c.stop();
      }
      // c left cleanly: a and b own everything again.
      await expect.poll(() => balanced([a, b], { m1: 4, m2: 3 }), { timeout: 10_000 }).toBe(true);

      // The controller marks escrow 1 draining (finalize, architecture §2.6): its owner hands it back.
      await setEscrowState(db.sql, 1n, 'draining');
      await expect.poll(() => a.leases.has(1n) || b.leases.has(1n), { timeout: 10_000 }).toBe(false);
      expect(await redis.get(keys.escrowLease(1n))).toBeNull();
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});
