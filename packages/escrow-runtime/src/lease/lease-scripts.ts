// The three compare-and-… operations of an escrow lease (architecture §2.1), each one Lua script so
// the comparison and the write are atomic in Redis: a lease whose value changed (another owner, a
// FLUSHALL, an expiry) is never renewed, rewritten or deleted by its previous holder.
import type { Redis } from 'ioredis';

/** PEXPIRE only while the key still holds our value: 1 renewed, 0 lost. */
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`;

/** Replaces our value (keeping the TTL) only while the key still holds it: 1 done, 0 lost. */
const SWAP = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
  return 1
end
return 0`;

/** DEL only while the key still holds our value: 1 released, 0 it was not ours any more. */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`;

async function run(redis: Redis, script: string, key: string, ...args: string[]): Promise<boolean> {
  return Number(await redis.eval(script, 1, key, ...args)) === 1;
}

export const leaseScripts = {
  /** SET NX PX: true when the key was free and is now ours. */
  async acquire(redis: Redis, key: string, value: string, ttlMs: number): Promise<boolean> {
    return (await redis.set(key, value, 'PX', ttlMs, 'NX')) === 'OK';
  },
  renew: (redis: Redis, key: string, value: string, ttlMs: number) =>
    run(redis, RENEW, key, value, String(ttlMs)),
  swap: (redis: Redis, key: string, from: string, to: string) => run(redis, SWAP, key, from, to),
  release: (redis: Redis, key: string, value: string) => run(redis, RELEASE, key, value),
};
