// Spreading escrows over replicas (claim-loop.ts, fair-share.ts) against real Postgres and a private
// redis-server, with targets that only take leases: every live replica ends up owning an escrow of a
// model when there are enough, a single escrow is still claimed at once, and an escrow left to a peer
// that never claims waits only the spread deferral.
import { closeRedis, openRedis, type RedisKeys, redisKeys } from '@gonka-gateway/shared';
import { createTestDatabase, type TestDatabase } from '@gonka-gateway/shared/testing';
import type { Redis } from 'ioredis';
import type { Sql } from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EscrowLease } from '../lease/escrow-lease.js';
import { insertEscrowRows } from '../testing/escrow-rows.js';
import { type PrivateRedis, startPrivateRedis } from '../testing/redis-server.js';
import type { ActiveEscrow } from './active-escrows.js';
import { ClaimLoop, type ClaimLoopOptions, type ClaimTarget } from './claim-loop.js';
import { ReplicaDirectory } from './replica-directory.js';

const TTL = 600;
let server: PrivateRedis;
let redis: Redis;
const databases: TestDatabase[] = [];
const connections: Redis[] = [];

beforeAll(async () => {
  server = await startPrivateRedis();
  redis = openRedis(server.url);
});

afterAll(async () => {
  await Promise.all(connections.map((c) => closeRedis(c)));
  await closeRedis(redis);
  await Promise.all([...databases.map((d) => d.drop()), server.stop()]);
});

class LeaseOnlyReplica implements ClaimTarget {
  readonly leases = new Map<bigint, EscrowLease>();
  readonly directory: ReplicaDirectory;
  readonly loop: ClaimLoop;

  constructor(
    readonly id: string,
    private readonly keys: RedisKeys,
    sql: Sql,
    loop: Partial<ClaimLoopOptions> = {},
  ) {
    this.directory = new ReplicaDirectory({ redis, keys, replicaId: id, url: `http://${id}`, ttlMs: TTL });
    this.loop = new ClaimLoop({
      sql,
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
    return new Set(this.leases.keys());
  }

  async claim(escrow: ActiveEscrow) {
    const id = escrow.escrowId;
    const lease = await EscrowLease.acquire({
      redis,
      keys: this.keys,
      escrowId: id,
      replicaId: this.id,
      ttlMs: TTL,
      onLost: () => this.leases.delete(id),
    });
    if (!lease) return false;
    this.leases.set(id, lease);
    return true;
  }

  async drain(id: bigint) {
    const lease = this.leases.get(id);
    this.leases.delete(id);
    await lease?.release();
  }
}

/** A fresh database with `n` active escrows of model m, and a key prefix of its own. */
async function fleet(prefix: string, n: number): Promise<{ sql: Sql; keys: RedisKeys }> {
  const db = await createTestDatabase();
  databases.push(db);
  const sql = db.sql as unknown as Sql;
  await insertEscrowRows(
    sql,
    [...Array(n).keys()].map((i) => ({ escrowId: BigInt(i + 1), modelId: 'm' })),
  );
  return { sql, keys: redisKeys(`${prefix}:`) };
}

const counts = (replicas: LeaseOnlyReplica[]) => replicas.map((r) => r.leases.size);

async function stopAll(replicas: LeaseOnlyReplica[]) {
  await Promise.all(replicas.map((r) => r.stop()));
}

describe('spreading escrows over replicas', () => {
  it('two replicas and two escrows of one model: each owns one, also when one started first and owned both', async () => {
    const { sql, keys } = await fleet('spread-two', 2);
    const a = new LeaseOnlyReplica('a', keys, sql);
    const b = new LeaseOnlyReplica('b', keys, sql);
    try {
      // a alone owns both (its share of two over one replica), then b joins and gets one of them.
      await a.start();
      await expect.poll(() => counts([a]), { timeout: 5_000 }).toEqual([2]);
      await b.start();
      await expect.poll(() => counts([a, b]), { timeout: 5_000 }).toEqual([1, 1]);
      // And it stays so.
      await new Promise((r) => setTimeout(r, TTL * 2));
      expect(counts([a, b])).toEqual([1, 1]);
    } finally {
      await stopAll([a, b]);
    }
  });

  it('three replicas and four escrows: each owns at least one, a replica that joins late included', async () => {
    const { sql, keys } = await fleet('spread-four', 4);
    const a = new LeaseOnlyReplica('a', keys, sql);
    const b = new LeaseOnlyReplica('b', keys, sql);
    const c = new LeaseOnlyReplica('c', keys, sql);
    const all = [a, b, c];
    try {
      // Two replicas own two each (the share of four over two): the ceiling of four over three is
      // two as well, so only spreading gives the third one an escrow.
      await a.start();
      await b.start();
      await expect.poll(() => counts([a, b]), { timeout: 5_000 }).toEqual([2, 2]);
      await c.start();
      await expect
        .poll(() => counts(all).every((n) => n >= 1) && counts(all).reduce((s, n) => s + n) === 4, {
          timeout: 5_000,
        })
        .toBe(true);
      await new Promise((r) => setTimeout(r, TTL * 2));
      expect([...counts(all)].sort()).toEqual([1, 1, 2]);
    } finally {
      await stopAll(all);
    }
  });

  it('a single escrow is claimed at once by one of two replicas, on its announcement', async () => {
    const db = await createTestDatabase();
    databases.push(db);
    const sql = db.sql as unknown as Sql;
    const keys = redisKeys('spread-one:');
    // Only the announcement can start a pass, and a deferral would last a minute.
    const LONG = 60_000;
    const replica = (id: string) => {
      const subscriber = redis.duplicate({ enableReadyCheck: false });
      connections.push(subscriber);
      return new LeaseOnlyReplica(id, keys, sql, {
        subscriber,
        everyMs: LONG,
        overdueAfterMs: LONG,
        spreadDeferMs: LONG,
      });
    };
    const a = replica('one-a');
    const b = replica('one-b');
    try {
      await a.start();
      await b.start();
      await new Promise((r) => setTimeout(r, 200)); // the first passes ran, with nothing to claim
      await insertEscrowRows(sql, [{ escrowId: 1n, modelId: 'm' }]);
      const registered = performance.now();
      await redis.publish(keys.poolChanges, '1');
      await expect
        .poll(() => counts([a, b]).reduce((s, n) => s + n), { timeout: 5_000, interval: 10 })
        .toBe(1);
      expect(performance.now() - registered).toBeLessThan(2_000);
    } finally {
      await stopAll([a, b]);
    }
  });

  it('an escrow left to a fresh peer that never claims is claimed once the deferral runs out, and the model is then held', async () => {
    const { sql, keys } = await fleet('spread-mute', 3);
    const DEFER = 1_500;
    const a = new LeaseOnlyReplica('a', keys, sql, { spreadDeferMs: DEFER, overdueAfterMs: 60_000 });
    // A replica that refreshes its directory entry but claims nothing (it cannot serve the model).
    const mute = new ReplicaDirectory({ redis, keys, replicaId: 'mute', url: 'http://mute', ttlMs: TTL });
    try {
      await mute.start();
      const started = performance.now();
      await a.start();
      // Share of three over two is two, floor one: one at once, the second left to the mute peer.
      await expect.poll(() => a.leases.size, { timeout: 2_000 }).toBe(1);
      await expect.poll(() => a.leases.size, { timeout: 5_000, interval: 20 }).toBe(2);
      expect(performance.now() - started).toBeGreaterThanOrEqual(DEFER - 100);
      // Held: the escrow a peer did not take is not handed back to it.
      await new Promise((r) => setTimeout(r, TTL * 2));
      expect(a.leases.size).toBe(2);
    } finally {
      await mute.stop();
      await stopAll([a]);
    }
  });
});
