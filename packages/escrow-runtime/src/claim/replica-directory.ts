// Live replicas (architecture §2.2, §2.4): each replica keeps its entry in the sorted set `replicas`
// (score = when the entry expires, Redis's clock) and its internal URL in the hash `replica-urls`,
// refreshed every TTL/3. Reads drop expired entries first, so a replica that dies disappears from
// the directory by itself; both keys expire a TTL after the last refresh, so a fleet that is gone
// leaves nothing behind. After Redis lost its data the next refresh of each replica lists it again.
// The claim loop divides escrows by the number of live replicas; the proxy forwards to an owner by
// its URL. One script per read: the former SCAN MATCH over the whole keyspace took a round trip per
// 500 keys of a large shared Redis.
import type { RedisKeys } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';

export interface LiveReplica {
  readonly replicaId: string;
  readonly url: string;
}

export interface ReplicaDirectoryOptions {
  readonly redis: Redis;
  readonly keys: RedisKeys;
  readonly replicaId: string;
  readonly url: string;
  readonly ttlMs: number;
  /** Refresh period (default TTL/3). */
  readonly refreshEveryMs?: number;
  readonly onError?: (error: Error) => void;
}

/** Redis's clock in ms (one clock for every replica, as for TTLs). */
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * Extends a key's TTL to at least ARGV ttl (replicas may run with different TTLs: a shorter one must
 * not cut a longer one's registration).
 */
const KEEP_AT_LEAST = `local function keepAtLeast(key, ttl)
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end`;

/** KEYS: replicas zset, replica-urls hash. ARGV: replica id, url, ttl ms. */
const REGISTER = `${NOW}
${KEEP_AT_LEAST}
local ttl = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
keepAtLeast(KEYS[1], ttl)
keepAtLeast(KEYS[2], ttl)
return 1`;

/**
 * KEYS: replicas zset, replica-urls hash. Drops expired entries; returns [id, url, ms left, …] (ms
 * left: until the entry expires, by Redis's clock).
 */
const LIVE = `${NOW}
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
if #expired > 0 then
  redis.call('ZREM', KEYS[1], unpack(expired))
  redis.call('HDEL', KEYS[2], unpack(expired))
end
local entries = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
if #entries == 0 then return {} end
local ids = {}
for i = 1, #entries, 2 do ids[#ids + 1] = entries[i] end
local urls = redis.call('HMGET', KEYS[2], unpack(ids))
local out = {}
for i, id in ipairs(ids) do
  if urls[i] then
    out[#out + 1] = id
    out[#out + 1] = urls[i]
    out[#out + 1] = tostring(math.floor(tonumber(entries[2 * i]) - now))
  end
end
return out`;

/** KEYS: replicas zset, replica-urls hash. ARGV: replica id. */
const LEAVE = `redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1`;

export class ReplicaDirectory {
  readonly #o: ReplicaDirectoryOptions;
  #timer: NodeJS.Timeout | undefined;
  /** The refresh in flight: stop() waits for it, so it cannot list this replica again after leaving. */
  #refreshing: Promise<void> | undefined;
  #stopped = false;

  constructor(options: ReplicaDirectoryOptions) {
    this.#o = options;
  }

  get replicaId(): string {
    return this.#o.replicaId;
  }

  /** Registers now and keeps the registration alive until stop(). */
  async start(): Promise<void> {
    await this.register();
    this.#schedule();
  }

  /** Lists this replica until a TTL from now (also restores it after Redis lost its data). */
  async register(): Promise<void> {
    const { redis, keys, replicaId, url, ttlMs } = this.#o;
    await redis.eval(REGISTER, 2, keys.replicas, keys.replicaUrls, replicaId, url, String(ttlMs));
  }

  /** Every replica whose registration has not expired (this one included once registered). */
  async live(): Promise<LiveReplica[]> {
    return (await this.entries()).map(({ replicaId, url }) => ({ replicaId, url }));
  }

  /**
   * live() with each entry's freshness. A live replica refreshes every TTL/3, so its entry always
   * has more than half this replica's TTL left; one that stopped refreshing (killed, paused) drops
   * below that long before its entry expires and its leases run out. The claim loop spreads escrows
   * only toward fresh replicas, so a dead one never delays a takeover.
   */
  async entries(): Promise<(LiveReplica & { readonly fresh: boolean })[]> {
    const { redis, keys, ttlMs } = this.#o;
    const flat = (await redis.eval(LIVE, 2, keys.replicas, keys.replicaUrls)) as string[];
    const replicas: (LiveReplica & { fresh: boolean })[] = [];
    for (let i = 0; i + 2 < flat.length; i += 3) {
      replicas.push({ replicaId: flat[i]!, url: flat[i + 1]!, fresh: Number(flat[i + 2]) > ttlMs / 2 });
    }
    return replicas.sort((a, b) => (a.replicaId < b.replicaId ? -1 : a.replicaId > b.replicaId ? 1 : 0));
  }

  /** Stops refreshing and removes the registration (a clean shutdown hands its share over at once). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#refreshing;
    const { redis, keys, replicaId } = this.#o;
    await redis.eval(LEAVE, 2, keys.replicas, keys.replicaUrls, replicaId).catch(() => 0);
  }

  #schedule(): void {
    if (this.#stopped) return;
    const every = this.#o.refreshEveryMs ?? Math.max(1, Math.floor(this.#o.ttlMs / 3));
    this.#timer = setTimeout(() => {
      this.#refreshing = this.register()
        .catch((error: Error) => this.#o.onError?.(error))
        .finally(() => {
          this.#refreshing = undefined;
          this.#schedule();
        });
    }, every);
    this.#timer.unref();
  }
}
