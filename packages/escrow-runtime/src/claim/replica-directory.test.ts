// The replica directory against a real (private) redis-server: replicas are listed from one sorted set
// and one hash under the key prefix (no keyspace SCAN), a replica that stops refreshing is no longer
// fresh, then disappears and its entries are pruned, a short TTL never cuts a longer one, and a FLUSHALL or a restart of
// Redis heals by the replicas' next refresh.
import { closeRedis, openRedis, type RedisKeys, redisKeys } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PrivateRedis, startPrivateRedis } from '../testing/redis-server.js';
import { ReplicaDirectory } from './replica-directory.js';

let server: PrivateRedis;
let redis: Redis;
let keys: RedisKeys;
let prefixCount = 0;

beforeAll(async () => {
  server = await startPrivateRedis();
  redis = openRedis(server.url, { name: 'replica-directory-test' });
});
afterAll(async () => {
  if (redis) await closeRedis(redis);
  await server?.stop();
});

/** A fresh prefix per test, as two gateways sharing one Redis would have. */
function freshKeys(): RedisKeys {
  keys = redisKeys(`rd${++prefixCount}:`);
  return keys;
}

function directory(replicaId: string, ttlMs: number, connection: Redis = redis): ReplicaDirectory {
  return new ReplicaDirectory({
    redis: connection,
    keys,
    replicaId,
    url: `http://${replicaId}.internal:8080`,
    ttlMs,
  });
}

const ids = async (d: ReplicaDirectory) => (await d.live()).map((r) => r.replicaId);

describe('ReplicaDirectory', () => {
  it('lists the live replicas with their URLs from two keys under the prefix', async () => {
    freshKeys();
    const a = directory('replica-a', 60_000);
    const b = directory('replica-b', 60_000);
    await b.register();
    await a.register();
    // Another gateway on the same Redis (another prefix) is not listed.
    const other = new ReplicaDirectory({
      redis,
      keys: redisKeys('other-gateway:'),
      replicaId: 'replica-z',
      url: 'http://z',
      ttlMs: 60_000,
    });
    await other.register();
    expect(await a.live()).toEqual([
      { replicaId: 'replica-a', url: 'http://replica-a.internal:8080' },
      { replicaId: 'replica-b', url: 'http://replica-b.internal:8080' },
    ]);
    expect(await redis.zrange(keys.replicas, 0, -1)).toEqual(
      expect.arrayContaining(['replica-a', 'replica-b']),
    );
    expect(await redis.hget(keys.replicaUrls, 'replica-b')).toBe('http://replica-b.internal:8080');
    // Nothing else under the prefix: a read is one script over these two keys.
    expect((await redis.keys(`${keys.prefix}*`)).sort()).toEqual([keys.replicaUrls, keys.replicas].sort());
    await other.stop();
    // A clean stop leaves at once.
    await b.stop();
    expect(await ids(a)).toEqual(['replica-a']);
    expect(await redis.hget(keys.replicaUrls, 'replica-b')).toBeNull();
  });

  it('drops a replica that stopped refreshing, and prunes its entries on read', async () => {
    freshKeys();
    const alive = directory('alive', 60_000);
    const dead = directory('dead', 300);
    await alive.register();
    await dead.register();
    expect(await ids(alive)).toEqual(['alive', 'dead']);
    // `dead` never refreshes (a crashed process): it expires by Redis's clock.
    await expect.poll(() => ids(alive), { timeout: 10_000 }).toEqual(['alive']);
    expect(await redis.zscore(keys.replicas, 'dead')).toBeNull();
    expect(await redis.hexists(keys.replicaUrls, 'dead')).toBe(0);
    // The registration of the longest TTL sets how long the keys live.
    expect(await redis.pttl(keys.replicas)).toBeGreaterThan(1_000);
  });

  it('marks a replica fresh while it refreshes, and no longer once it missed its refreshes', async () => {
    freshKeys();
    const running = directory('running', 900);
    const stopped = directory('stopped', 900);
    try {
      await running.start(); // refreshes every 300 ms
      await stopped.register(); // never again
      const fresh = async () => (await running.entries()).filter((r) => r.fresh).map((r) => r.replicaId);
      expect(await fresh()).toEqual(['running', 'stopped']);
      // Past half its TTL without a refresh: still listed, but no longer fresh.
      await new Promise((r) => setTimeout(r, 550));
      expect(await ids(running)).toEqual(['running', 'stopped']);
      expect(await fresh()).toEqual(['running']);
    } finally {
      await running.stop();
    }
  });

  it('a fleet that is gone leaves no keys behind', async () => {
    freshKeys();
    const only = directory('only', 300);
    await only.register();
    await expect.poll(() => redis.exists(keys.replicas, keys.replicaUrls), { timeout: 10_000 }).toBe(0);
  });

  it('lists the replicas again after FLUSHALL and after a Redis restart, by their refreshes', async () => {
    freshKeys();
    // Each replica on its own connection, as in a proxy (it reconnects after the restart).
    const connections = [openRedis(server.url, { name: 'r1' }), openRedis(server.url, { name: 'r2' })];
    const replicas = [directory('r1', 600, connections[0]), directory('r2', 600, connections[1])];
    try {
      await Promise.all(replicas.map((r) => r.start()));
      expect(await ids(replicas[0]!)).toEqual(['r1', 'r2']);
      await redis.flushall();
      expect(await ids(replicas[0]!)).toEqual([]);
      await expect.poll(() => ids(replicas[0]!), { timeout: 10_000 }).toEqual(['r1', 'r2']);

      await server.stop();
      server = await startPrivateRedis({ port: server.port });
      await expect.poll(() => ids(replicas[0]!).catch(() => []), { timeout: 20_000 }).toEqual(['r1', 'r2']);
    } finally {
      await Promise.all(replicas.map((r) => r.stop()));
      await Promise.all(connections.map((c) => closeRedis(c)));
    }
  });
});
