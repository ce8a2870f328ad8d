// Claiming against real Postgres and a private redis-server, with a target that only takes leases
// (the sessions are exercised by the multi-process tests in tests/ownership/).
import { once } from 'node:events';
import { closeRedis, openRedis, type RedisKeys, redisKeys } from '@gonka-gateway/shared';
import { createTestDatabase, type TestDatabase } from '@gonka-gateway/shared/testing';
import type { Redis } from 'ioredis';
import type { Sql } from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EscrowLease } from '../lease/escrow-lease.js';
import { insertEscrowRows, setEscrowState } from '../testing/escrow-rows.js';
import { type PrivateRedis, startPrivateRedis } from '../testing/redis-server.js';
import type { ActiveEscrow } from './active-escrows.js';
import { ClaimLoop, type ClaimLoopOptions, type ClaimTarget } from './claim-loop.js';
import { ReplicaDirectory } from './replica-directory.js';

const TTL = 600;
let db: TestDatabase;
let server: PrivateRedis;
let redis: Redis;
let keys: RedisKeys;

class LeaseOnlyReplica implements ClaimTarget {
  readonly leases = new Map<bigint, EscrowLease>();
  readonly models = new Map<bigint, string>();
  /** Passes that have read the active escrows (each asks owned() after its read). */
  passes = 0;
  readonly directory: ReplicaDirectory;
  readonly loop: ClaimLoop;

  constructor(
    readonly id: string,
    loop: Partial<
      Pick<ClaimLoopOptions, 'sql' | 'subscriber' | 'everyMs' | 'overdueAfterMs' | 'announcedGraceMs'>
    > = {},
  ) {
    this.directory = new ReplicaDirectory({ redis, keys, replicaId: id, url: `http://${id}`, ttlMs: TTL });
    this.loop = new ClaimLoop({
      sql: db.sql,
      redis,
      keys,
      directory: this.directory,
      target: this,
      everyMs: TTL / 3,
      overdueAfterMs: TTL,
      ...loop,
    });
  }

  async start() {
    await this.directory.start();
    await this.loop.start();
  }

  async stop() {
    await this.loop.stop();
    await this.directory.stop();
    await Promise.all([...this.leases.keys()].map((id) => this.drain(id)));
  }

  owned() {
    this.passes++;
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

describe('claiming on the announcement', () => {
  // Periodic passes and the overdue rule are ten minutes away: only the announcement on
  // `pool:changes` (published by the controller after its commit) can make these claims happen.
  const LONG = 600_000;
  const GRACE = 1_000;
  let fresh: TestDatabase;
  const subscribers: Redis[] = [];

  beforeAll(async () => {
    fresh = await createTestDatabase();
  });
  afterAll(async () => {
    await Promise.all(subscribers.map((s) => closeRedis(s)));
    await fresh.drop();
  });

  const replica = async (id: string): Promise<LeaseOnlyReplica> => {
    const subscriber = redis.duplicate({ enableReadyCheck: false });
    subscribers.push(subscriber);
    const r = new LeaseOnlyReplica(id, {
      sql: fresh.sql as unknown as Sql,
      subscriber,
      everyMs: LONG,
      overdueAfterMs: LONG,
      announcedGraceMs: GRACE,
    });
    await r.start();
    // The first pass has read Postgres: what is registered from here on is only announced.
    await expect.poll(() => r.passes, { timeout: 10_000 }).toBeGreaterThan(0);
    return r;
  };
  /** What the controller does at registration: the row, then the announcement. */
  const register = async (escrowId: bigint) => {
    await insertEscrowRows(fresh.sql as unknown as Sql, [{ escrowId, modelId: 'm-new' }]);
    await redis.publish(keys.poolChanges, escrowId.toString());
  };
  const holders = (replicas: LeaseOnlyReplica[], escrowId: bigint) =>
    replicas.filter((r) => r.leases.has(escrowId)).map((r) => r.id);

  it('claims a newly registered escrow at once: below the share first, beyond it after the grace', async () => {
    await redis.flushall();
    const a = await replica('new-a');
    const b = await replica('new-b');
    const replicas = [a, b];
    const ghost = new ReplicaDirectory({ redis, keys, replicaId: 'ghost', url: 'http://ghost', ttlMs: LONG });
    try {
      // The first passes ran at start, with nothing to claim.
      await register(101n);
      await expect.poll(() => holders(replicas, 101n).length, { timeout: 10_000 }).toBe(1);
      const [first] = holders(replicas, 101n);
      const other = first === a.id ? b : a;

      // Share of two escrows over two replicas is one: the replica owning nothing takes the new one,
      // and the other, at its share, leaves it to it.
      await register(102n);
      await expect.poll(() => holders(replicas, 102n), { timeout: 10_000 }).toEqual([other.id]);
      expect(holders(replicas, 101n)).toEqual([first]);

      // A replica the directory still lists but that claims nothing (one that just died): the share
      // of three escrows is one, which both live replicas hold. The announced escrow is claimed
      // beyond the share once its grace has passed, not after overdueAfterMs.
      await ghost.register();
      await register(103n);
      await expect.poll(() => holders(replicas, 103n).length, { timeout: 10_000 }).toBe(1);
    } finally {
      await ghost.stop();
      await a.stop();
      await b.stop();
    }
    for (const sub of subscribers) expect(sub.listenerCount('message') + sub.listenerCount('ready')).toBe(0);
  });

  it('claims what was announced while its subscriber was away once it is back', async () => {
    await redis.flushall();
    const a = await replica('away-a');
    const sub = subscribers.at(-1)!;
    try {
      const away = once(sub, 'end');
      sub.disconnect();
      await away;
      await register(201n); // announced to nobody
      await sub.connect();
      await expect.poll(() => a.leases.has(201n), { timeout: 10_000 }).toBe(true);
    } finally {
      await a.stop();
    }
  });
});
