import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createTestRedis, deleteKeysWithPrefix, type TestRedis } from '../testing/test-redis.js';
import { closeRedis, openRedis } from './client.js';
import {
  decodeHostHealth,
  HOST_COUNTERS,
  liftQuarantine,
  readHostHealth,
  writeHostHealth,
} from './host-health.js';
import { type RedisKeys, redisKeys } from './keys.js';

const MODEL = 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8';
const OTHER_MODEL = 'Qwen/Qwen3-32B';
const HOST = 'gonka1host0000000000000000000000000000aaaa';
const OTHER_HOST = 'gonka1host0000000000000000000000000000bbbb';

let t: TestRedis;
let keys: RedisKeys;

beforeAll(async () => {
  t = await createTestRedis();
  keys = redisKeys(t.prefix);
});
afterAll(async () => {
  await t.cleanup();
});
beforeEach(async () => {
  await deleteKeysWithPrefix(t.redis, t.prefix);
});

describe('writeHostHealth / readHostHealth', () => {
  it('increments counters, sets fields, indexes the record and stamps updated_at', async () => {
    const before = Date.now();
    await writeHostHealth(t.redis, keys, [
      { participant: HOST, model: MODEL, add: { attempts: 1, failures: 1 }, set: { receiptMs: 812.5 } },
      {
        participant: HOST,
        model: MODEL,
        add: { attempts: 2, successes: 1 },
        set: {
          state: 'quarantined',
          quarantinedUntilMs: 1_900_000_000_000,
          timesQuarantined: 2,
          consecutiveFailures: 3,
          lastError: 'receipt_timeout',
          lastErrorAtMs: 1_800_000_000_000,
          firstTokenMs: 1500,
          tokensPerSecond: 42.25,
        },
      },
      { participant: OTHER_HOST, model: OTHER_MODEL, add: { probes: 1 } },
    ]);

    expect(await t.redis.smembers(keys.hostHealthIndex)).toEqual(
      expect.arrayContaining([`${MODEL}|${HOST}`, `${OTHER_MODEL}|${OTHER_HOST}`]),
    );
    const hash = await t.redis.hgetall(keys.hostHealth(MODEL, HOST));
    expect(hash).toMatchObject({
      attempts: '3',
      successes: '1',
      failures: '1',
      state: 'quarantined',
      quarantined_until: '1900000000000',
      times_quarantined: '2',
      consecutive_failures: '3',
      last_error: 'receipt_timeout',
      last_error_at: '1800000000000',
      receipt_ms: '812.5',
      first_token_ms: '1500',
      tokens_per_s: '42.25',
    });

    const records = await readHostHealth(t.redis, keys);
    expect(records).toHaveLength(2);
    const rec = records.find((r) => r.participant === HOST)!;
    expect(rec).toMatchObject({
      model: MODEL,
      state: 'quarantined',
      quarantinedUntilMs: 1_900_000_000_000,
      timesQuarantined: 2,
      consecutiveFailures: 3,
      lastError: 'receipt_timeout',
      lastErrorAtMs: 1_800_000_000_000,
      receiptMs: 812.5,
      firstTokenMs: 1500,
      tokensPerSecond: 42.25,
      liftedAtMs: 0,
    });
    expect(rec.counters).toEqual({
      ...Object.fromEntries(HOST_COUNTERS.map((c) => [c, 0])),
      attempts: 3,
      successes: 1,
      failures: 1,
    });
    expect(rec.updatedAtMs).toBeGreaterThanOrEqual(before);

    const other = records.find((r) => r.participant === OTHER_HOST)!;
    expect(other).toMatchObject({ model: OTHER_MODEL, state: 'healthy', receiptMs: undefined });
    expect(other.counters.probes).toBe(1);
  });

  it('clears an optional field set to undefined', async () => {
    await writeHostHealth(t.redis, keys, [
      { participant: HOST, model: MODEL, set: { lastError: 'http_503', receiptMs: 100 } },
    ]);
    await writeHostHealth(t.redis, keys, [
      { participant: HOST, model: MODEL, set: { lastError: undefined, receiptMs: undefined } },
    ]);
    const [rec] = await readHostHealth(t.redis, keys);
    expect(rec).toMatchObject({ lastError: undefined, receiptMs: undefined });
  });

  it('sends every update in one socket write', async () => {
    const stream = (t.redis as unknown as { stream: { write: (chunk: unknown) => boolean } }).stream;
    const write = vi.spyOn(stream, 'write');
    try {
      await writeHostHealth(t.redis, keys, [
        { participant: HOST, model: MODEL, add: { attempts: 1 }, set: { receiptMs: 5 } },
        { participant: OTHER_HOST, model: MODEL, add: { attempts: 1, stalls: 1 } },
      ]);
      expect(write).toHaveBeenCalledTimes(1);
    } finally {
      write.mockRestore();
    }
    expect((await readHostHealth(t.redis, keys)).map((r) => r.counters.attempts)).toEqual([1, 1]);
  });

  it('reads missing or malformed fields as defaults and skips a dangling index member', async () => {
    await t.redis.hset(keys.hostHealth(MODEL, HOST), {
      state: 'bogus',
      attempts: 'x',
      receipt_ms: 'NaN',
      last_error: '',
    });
    await t.redis.sadd(keys.hostHealthIndex, `${MODEL}|${HOST}`, `${MODEL}|${OTHER_HOST}`, 'no-bar');
    const records = await readHostHealth(t.redis, keys);
    expect(records).toEqual([decodeHostHealth(MODEL, HOST, {})]);
    expect(records[0]).toMatchObject({
      state: 'healthy',
      quarantinedUntilMs: 0,
      lastError: undefined,
      receiptMs: undefined,
      updatedAtMs: 0,
    });
    expect(records[0]?.counters.attempts).toBe(0);
  });

  it('reads an empty index as no records', async () => {
    expect(await readHostHealth(t.redis, keys)).toEqual([]);
  });
});

describe('liftQuarantine', () => {
  async function quarantine(participant: string, model: string) {
    await writeHostHealth(t.redis, keys, [
      {
        participant,
        model,
        add: { failures: 4 },
        set: {
          state: 'quarantined',
          quarantinedUntilMs: Date.now() + 60_000,
          timesQuarantined: 1,
          consecutiveFailures: 4,
          lastError: 'stall',
        },
      },
    ]);
  }

  it('lifts every model of the participant, keeps history and announces each', async () => {
    await quarantine(HOST, MODEL);
    await quarantine(HOST, OTHER_MODEL);
    await quarantine(OTHER_HOST, MODEL);

    const sub = openRedis(t.url, { name: 'host-health-test-sub' });
    const messages: string[] = [];
    sub.on('message', (_channel: string, message: string) => messages.push(message));
    await sub.subscribe(keys.hostHealthChanges);
    try {
      const before = Date.now();
      expect(await liftQuarantine(t.redis, keys, HOST)).toBe(2);
      await new Promise((r) => setTimeout(r, 50));
      expect(messages.sort()).toEqual([`${MODEL}|${HOST}`, `${OTHER_MODEL}|${HOST}`].sort());

      const records = await readHostHealth(t.redis, keys);
      for (const r of records.filter((x) => x.participant === HOST)) {
        expect(r).toMatchObject({
          state: 'healthy',
          quarantinedUntilMs: 0,
          consecutiveFailures: 0,
          timesQuarantined: 1,
          lastError: 'stall',
        });
        expect(r.counters.failures).toBe(4);
        expect(r.liftedAtMs).toBeGreaterThanOrEqual(before);
      }
      expect(records.find((x) => x.participant === OTHER_HOST)?.state).toBe('quarantined');
    } finally {
      await closeRedis(sub);
    }
  });

  it('lifts only the named model', async () => {
    await quarantine(HOST, MODEL);
    await quarantine(HOST, OTHER_MODEL);
    expect(await liftQuarantine(t.redis, keys, HOST, OTHER_MODEL)).toBe(1);
    const records = await readHostHealth(t.redis, keys);
    expect(records.find((r) => r.model === MODEL)?.state).toBe('quarantined');
    expect(records.find((r) => r.model === OTHER_MODEL)?.state).toBe('healthy');
  });

  it('returns 0 and creates nothing for an unknown participant, model or dangling member', async () => {
    await quarantine(HOST, MODEL);
    await t.redis.sadd(keys.hostHealthIndex, `${MODEL}|${OTHER_HOST}`);
    expect(await liftQuarantine(t.redis, keys, OTHER_HOST)).toBe(0);
    expect(await liftQuarantine(t.redis, keys, HOST, OTHER_MODEL)).toBe(0);
    expect(await t.redis.exists(keys.hostHealth(MODEL, OTHER_HOST))).toBe(0);
  });
});
