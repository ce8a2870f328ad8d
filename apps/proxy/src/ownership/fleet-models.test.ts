// FleetModels against real Postgres and Redis: the models with a registered escrow that is active in
// both senses (lifecycle state and local flag), a registration read on its `pool:changes`
// announcement, and every change read on the period without one.
import { insertEscrowRows } from '@gonka-gateway/escrow-runtime/testing';
import { closeRedis, redisKeys } from '@gonka-gateway/shared';
import {
  createTestDatabase,
  createTestRedis,
  type TestDatabase,
  type TestRedis,
} from '@gonka-gateway/shared/testing';
import type { Redis } from 'ioredis';
import type { Sql } from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetModels } from './fleet-models.js';

let db: TestDatabase;
let redis: TestRedis;
let subscriber: Redis;
let sql: Sql;

beforeAll(async () => {
  [db, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
  subscriber = redis.redis.duplicate({ enableReadyCheck: false });
  sql = db.sql as unknown as Sql;
  await insertEscrowRows(sql, [
    { escrowId: 1n, modelId: 'model-a' },
    { escrowId: 2n, modelId: 'model-a' },
    { escrowId: 3n, modelId: 'model-draining', state: 'draining' },
    { escrowId: 4n, modelId: 'model-deactivated', active: false },
    { escrowId: 5n, modelId: 'model-settled', state: 'settled' },
  ]);
});
afterAll(async () => {
  await closeRedis(subscriber);
  await Promise.all([db.drop(), redis.cleanup()]);
});

describe('FleetModels', () => {
  it('lists the models of registered, active escrows; a registration is read on its announcement', async () => {
    const channel = redisKeys(redis.prefix).poolChanges;
    const errors: Error[] = [];
    // Both periods far beyond the test: only an announcement of a new escrow can start a read.
    const fleet = new FleetModels({
      sql,
      subscriber,
      channel,
      refreshEveryMs: 600_000,
      changeGapMs: 600_000,
      onError: (error) => errors.push(error),
    });
    expect(fleet.has('model-a')).toBe(false);
    await fleet.start();
    try {
      expect(fleet.loaded).toBe(true);
      expect(fleet.models()).toEqual(new Set(['model-a']));
      for (const model of ['model-draining', 'model-deactivated', 'model-settled', 'model-new']) {
        expect(fleet.has(model), model).toBe(false);
      }
      // What the controller does at registration: the row, then the announcement.
      await insertEscrowRows(sql, [{ escrowId: 6n, modelId: 'model-new' }]);
      await redis.redis.publish(channel, '6');
      await expect.poll(() => fleet.has('model-new')).toBe(true);
      // Activation of a deactivated escrow: the same announcement.
      await sql`update escrows set active = true where escrow_id = 4`;
      await redis.redis.publish(channel, '4');
      await expect.poll(() => fleet.has('model-deactivated')).toBe(true);
      expect(errors).toEqual([]);
    } finally {
      fleet.stop();
    }
    expect(subscriber.listenerCount('message') + subscriber.listenerCount('ready')).toBe(0);
  });

  it('reads on its period without a subscriber: a model leaves with its last active escrow', async () => {
    const fleet = new FleetModels({ sql, refreshEveryMs: 100 });
    await fleet.start();
    try {
      expect(fleet.has('model-a')).toBe(true);
      await sql`update escrows set active = false where escrow_id = 1`;
      // One escrow of the model is still active.
      await fleet.refresh();
      expect(fleet.has('model-a')).toBe(true);
      await sql`update escrows set state = 'draining' where escrow_id = 2`;
      await expect.poll(() => fleet.has('model-a')).toBe(false);
      await insertEscrowRows(sql, [{ escrowId: 7n, modelId: 'model-a' }]);
      await expect.poll(() => fleet.has('model-a')).toBe(true);
    } finally {
      fleet.stop();
    }
  });
});
