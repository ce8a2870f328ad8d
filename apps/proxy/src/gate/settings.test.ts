// SettingsSource against real Postgres and Redis: the `settings:changes` message is what makes a
// replica read (no one-second poll while subscribed), a change published while the subscription was
// down is read once it is back, and a message that arrives during a read gets a read of its own.
// `loaded` (readiness) waits for a first read that succeeded, retried every second until then.
import { once } from 'node:events';
import { type GatewayConfig, redisKeys } from '@gonka-gateway/shared';
import {
  createTestDatabase,
  createTestRedis,
  type TestDatabase,
  type TestRedis,
} from '@gonka-gateway/shared/testing';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SETTINGS_SAFETY_REREAD_MS, SETTINGS_UNSUBSCRIBED_REREAD_MS, SettingsSource } from './settings.js';

const config = {
  bootstrapSettings: {
    defaultRequestMaxTokens: 100,
    requestMaxTokensCap: 200,
    disabled: { enabled: false, message: '', newUrl: null },
  },
  proxy: { passthroughParameters: ['min_tokens'] },
} as unknown as GatewayConfig;

let db: TestDatabase;
let redis: TestRedis;
let source: SettingsSource | undefined;
const channel = () => redisKeys(redis.prefix).settingsChanges;

beforeAll(async () => {
  db = await createTestDatabase();
  redis = await createTestRedis();
  await db.sql`
    insert into settings (id, default_request_max_tokens, request_max_tokens_cap, escrow_rotation, disabled)
    values (1, 100, 200, '{}'::jsonb, '{"enabled":false}'::jsonb)`;
});
afterEach(async () => {
  await source?.stop();
  source = undefined;
});
afterAll(async () => {
  await redis?.cleanup();
  await db?.drop();
});

/** What the controller does: the row (revision + 1), then the message. Returns the new revision. */
async function changeSettings(announce = true): Promise<bigint> {
  const [row] = await db.sql<{ revision: string }[]>`
    update settings set default_request_max_tokens = default_request_max_tokens + 1, revision = revision + 1
     where id = 1 returning revision::text as revision`;
  if (announce) await redis.redis.publish(channel(), row!.revision);
  return BigInt(row!.revision);
}

/** A stand-in for the key directory that counts reads and can hold one open. */
function countingKeys() {
  const keys = {
    reads: 0,
    hold: undefined as Promise<void> | undefined,
    reload: async () => {
      keys.reads++;
      await keys.hold;
    },
  };
  return keys;
}

/** Connected before the source starts, so its first read is the only one start makes. */
async function newSubscriber(): Promise<Redis> {
  const subscriber = redis.redis.duplicate({ enableReadyCheck: false });
  if (subscriber.status !== 'ready') await once(subscriber, 'ready');
  return subscriber;
}

/** Starts a source on a fresh subscriber; `options` override the periods. */
async function startSource(
  options: {
    keys?: ReturnType<typeof countingKeys>;
    refreshEveryMs?: number;
    unsubscribedRefreshEveryMs?: number;
    onError?: (error: Error) => void;
  } = {},
): Promise<{ source: SettingsSource; sub: Redis }> {
  const sub = await newSubscriber();
  const started = new SettingsSource({
    database: db,
    config,
    subscriber: sub,
    channel: channel(),
    ...options,
  });
  source = started;
  await started.start();
  return { source: started, sub };
}

/** Closes the subscriber's connection (no reconnect until connect()). */
async function dropSubscription(sub: Redis): Promise<void> {
  const closed = once(sub, 'end');
  sub.disconnect(false);
  await closed;
}

describe('SettingsSource', () => {
  it('reads when a change is announced, and not every second while subscribed', async () => {
    const keys = countingKeys();
    const { source } = await startSource({ keys });
    expect(source.refreshEveryMs).toBe(SETTINGS_SAFETY_REREAD_MS);
    await expect.poll(() => keys.reads).toBeGreaterThanOrEqual(1);
    const afterStart = keys.reads;
    const revision = await changeSettings();
    await expect.poll(() => source.current.revision).toBe(revision);
    expect(source.current.defaultMaxTokens).toBeGreaterThan(100);
    expect(keys.reads).toBe(afterStart + 1);
    // A fixed one-second period would have read once more by now; the safety period is 30 s.
    await new Promise((r) => setTimeout(r, 1_100));
    expect(keys.reads).toBe(afterStart + 1);
  });

  it('makes one read at start while its subscriber is still connecting', async () => {
    const keys = countingKeys();
    const sub = redis.redis.duplicate({ enableReadyCheck: false });
    expect(sub.status).not.toBe('ready');
    source = new SettingsSource({ database: db, config, keys, subscriber: sub, channel: channel() });
    await source.start();
    expect(keys.reads).toBe(1);
    // The connection's first 'ready' came during start: it does not add a second read.
    await new Promise((r) => setTimeout(r, 300));
    expect(keys.reads).toBe(1);
    expect(source.refreshEveryMs).toBe(SETTINGS_SAFETY_REREAD_MS);
  });

  it('reads what changed while unsubscribed once the subscription is back, reading faster meanwhile', async () => {
    // Both periods far beyond the test: only the read on resubscribing can see the change.
    const { source, sub } = await startSource({
      refreshEveryMs: 600_000,
      unsubscribedRefreshEveryMs: 500_000,
    });
    expect(source.refreshEveryMs).toBe(600_000);
    await dropSubscription(sub);
    expect(source.refreshEveryMs).toBe(500_000);
    // Published while no replica connection listens: the message is lost.
    const revision = await changeSettings();
    await new Promise((r) => setTimeout(r, 200));
    expect(source.current.revision).not.toBe(revision);
    await sub.connect();
    await expect.poll(() => source.current.revision).toBe(revision);
    await expect.poll(() => source.refreshEveryMs).toBe(600_000);
    // Subscribed again: the next announced change arrives by message.
    const next = await changeSettings();
    await expect.poll(() => source.current.revision).toBe(next);
  });

  it('defaults to a one-second read while the subscription is down', async () => {
    const { source, sub } = await startSource();
    await dropSubscription(sub);
    expect(source.refreshEveryMs).toBe(SETTINGS_UNSUBSCRIBED_REREAD_MS);
    // The one-second read sees an unannounced change without the subscription.
    const revision = await changeSettings(false);
    await expect.poll(() => source.current.revision, { timeout: 10_000 }).toBe(revision);
  });

  it('gives a message that arrives during a read a read that starts after it', async () => {
    const keys = countingKeys();
    const { source } = await startSource({ keys, refreshEveryMs: 600_000 });
    await expect.poll(() => keys.reads).toBeGreaterThanOrEqual(1);
    let release!: () => void;
    keys.hold = new Promise<void>((r) => {
      release = r;
    });
    const before = keys.reads;
    // A first message starts a read that stays open (its settings row is read at once).
    await redis.redis.publish(channel(), 'keys');
    await expect.poll(() => keys.reads).toBe(before + 1);
    await new Promise((r) => setTimeout(r, 300));
    // Committed and announced while that read is open: joining it would keep the old row.
    const revision = await changeSettings();
    await new Promise((r) => setTimeout(r, 300));
    keys.hold = undefined;
    release();
    await expect.poll(() => source.current.revision).toBe(revision);
    expect(keys.reads).toBe(before + 2);
  });

  it("passes through the environment's names plus the settings' list, as the announced revision says", async () => {
    const { source } = await startSource({ refreshEveryMs: 600_000 });
    expect([...source.current.passthrough]).toEqual(['min_tokens']);
    const list = async (names: string[]) => {
      const [row] = await db.sql<{ revision: string }[]>`
        update settings set passthrough_parameters = ${JSON.stringify(names)}::jsonb, revision = revision + 1
         where id = 1 returning revision::text as revision`;
      await redis.redis.publish(channel(), row!.revision);
    };
    await list(['guided_json', 'min_tokens']);
    await expect.poll(() => [...source.current.passthrough].sort()).toEqual(['guided_json', 'min_tokens']);
    // Removed from the settings: the environment's base list stays.
    await list([]);
    await expect.poll(() => [...source.current.passthrough]).toEqual(['min_tokens']);
  });

  it('is loaded once a read succeeds, reading every second until then even while subscribed', async () => {
    // The settings table cannot be read: the first read fails (a database being restored, say).
    await db.sql`alter table settings rename to settings_away`;
    const errors: Error[] = [];
    try {
      const { source } = await startSource({ refreshEveryMs: 600_000, onError: (e) => errors.push(e) });
      expect(source.loaded).toBe(false);
      expect(errors.length).toBeGreaterThan(0);
      expect(source.refreshEveryMs).toBe(SETTINGS_UNSUBSCRIBED_REREAD_MS);
    } finally {
      await db.sql`alter table settings_away rename to settings`;
    }
    // The one-second read succeeds now; the safety period applies from then on.
    await expect.poll(() => source?.loaded, { timeout: 5_000 }).toBe(true);
    expect(source?.refreshEveryMs).toBe(600_000);
    const [row] = await db.sql<{ revision: string }[]>`select revision::text as revision from settings`;
    expect(source?.current.revision).toBe(BigInt(row!.revision));
  });
});
