import { EventEmitter, once } from 'node:events';
import { type RedisKeys, redisKeys } from '@gonka-gateway/shared';
import { createTestRedis, type TestRedis } from '@gonka-gateway/shared/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EscrowLease, type EscrowLeaseOptions, LeaseLostError, parseLeaseValue } from './escrow-lease.js';

let t: TestRedis;
let keys: RedisKeys;
let nextEscrow = 1n;

beforeAll(async () => {
  t = await createTestRedis();
  keys = redisKeys(t.prefix);
});
afterAll(() => t.cleanup());

function options(extra: Partial<EscrowLeaseOptions> = {}): EscrowLeaseOptions {
  return { redis: t.redis, keys, escrowId: nextEscrow++, replicaId: 'r1', ttlMs: 600, ...extra };
}

/** A lease whose loss is observable as an event. */
async function watched(o: EscrowLeaseOptions) {
  const events = new EventEmitter();
  const lease = await EscrowLease.acquire({ ...o, onLost: (reason) => events.emit('lost', reason) });
  if (!lease) throw new Error('not acquired');
  return { lease, lost: once(events, 'lost').then(([reason]) => reason as string) };
}

describe('EscrowLease', () => {
  it('is exclusive (SET NX) and free again after a release', async () => {
    const o = options();
    const a = await EscrowLease.acquire(o);
    expect(a).toBeDefined();
    expect(await EscrowLease.acquire({ ...o, replicaId: 'r2' })).toBeUndefined();
    expect(await t.redis.get(a!.key)).toBe('r1:0');
    await a!.release();
    expect(await t.redis.get(a!.key)).toBeNull();
    const b = await EscrowLease.acquire({ ...o, replicaId: 'r2' });
    expect(b).toBeDefined();
    await b!.release();
  });

  it('renews itself past several TTLs and carries the Postgres token after setToken', async () => {
    const o = options({ ttlMs: 300 });
    const lease = (await EscrowLease.acquire(o))!;
    await lease.setToken(7n);
    expect(parseLeaseValue((await t.redis.get(lease.key))!)).toEqual({ replicaId: 'r1', token: 7n });
    // Five TTLs later the key is still ours: renewal ran (waiting is the scenario, not a timing assertion).
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await t.redis.get(lease.key)).toBe('r1:7');
    expect(() => lease.guard()).not.toThrow();
    await lease.release();
  });

  it('is lost when the key disappears (FLUSHALL) or changes, and guard then throws', async () => {
    const { lease, lost } = await watched(options({ ttlMs: 300 }));
    await t.redis.del(lease.key);
    expect(await lost).toBe('taken');
    expect(() => lease.guard()).toThrow(LeaseLostError);
    // Someone else takes it; our release must not delete their lease.
    await t.redis.set(lease.key, 'r2:9', 'PX', 5_000);
    await lease.release();
    expect(await t.redis.get(lease.key)).toBe('r2:9');
  });

  it('setToken refuses when the lease was taken over meanwhile', async () => {
    const lease = (await EscrowLease.acquire(options({ ttlMs: 5_000 })))!;
    await t.redis.set(lease.key, 'r2:3');
    await expect(lease.setToken(4n)).rejects.toThrow(LeaseLostError);
    expect(await t.redis.get(lease.key)).toBe('r2:3');
    expect(lease.lost).toBe('taken');
  });

  it('expires by the local monotonic deadline even while Redis still holds the key (a paused process)', async () => {
    let clock = 0;
    const { lease, lost } = await watched(options({ ttlMs: 5_000, safetyMarginMs: 1_000, now: () => clock }));
    clock = 3_999;
    expect(() => lease.guard()).not.toThrow();
    // As after SIGSTOP/SIGCONT: the monotonic clock jumped past TTL − margin before any renewal ran.
    clock = 4_000;
    expect(() => lease.guard()).toThrow(/expired/);
    expect(await lost).toBe('expired');
    // The key (still ours in Redis) is deleted, so the next owner need not wait for the TTL.
    await expect.poll(() => t.redis.get(lease.key)).toBeNull();
  });

  it('measures the deadline from before the SET was sent', async () => {
    let clock = 100;
    // A Redis whose SET takes 1 000 ms of (monotonic) time to answer.
    const slow = new Proxy(t.redis, {
      get(target, prop, receiver) {
        if (prop !== 'set') return Reflect.get(target, prop, receiver);
        return async (...args: Parameters<typeof target.set>) => {
          clock += 1_000;
          return (target.set as (...a: unknown[]) => Promise<unknown>)(...args);
        };
      },
    });
    const lease = (await EscrowLease.acquire(
      options({ redis: slow, ttlMs: 5_000, safetyMarginMs: 500, now: () => clock }),
    ))!;
    // Sent at 100: valid until 100 + 5000 − 500 = 4600, i.e. 3 500 ms left at 1 100.
    expect(lease.remainingMs).toBe(3_500);
    await lease.release();
  });
});
