// A stored change is announced to the replicas without hanging the admin request on a Redis that is
// down: real Postgres, the harness's Redis for the announcement that arrives, and a client of a port
// nobody listens on for the outage (ioredis keeps such commands queued until it connects).
import { closeRedis, openRedis } from '@gonka-gateway/shared';
import { freePort } from '@gonka-gateway/shared/testing';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settingsRoutes } from './admin/settings-routes.js';
import { announceChange } from './announce-change.js';
import type { ControllerContext } from './controller-context.js';
import { type ControllerHarness, startControllerHarness } from './testing/controller-harness.js';

describe('announcing a stored change', () => {
  let h: ControllerHarness;
  let ctx: ControllerContext;
  beforeAll(async () => {
    h = await startControllerHarness();
    await h.build(); // bootstraps the settings row
    ctx = h.context();
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  it('reaches a subscriber while Redis is up', async () => {
    const subscriber = h.redis.redis.duplicate();
    try {
      const got = new Promise<string>((resolve) => subscriber.on('message', (_c, m) => resolve(m)));
      await subscriber.subscribe(ctx.keys.settingsChanges);
      expect(await announceChange(ctx, ctx.keys.settingsChanges, 'keys')).toBe(true);
      expect(await got).toBe('keys');
    } finally {
      await closeRedis(subscriber);
    }
  });

  // Without the bound the request waits for the outage: the test's own timeout is what fails then.
  it('with Redis down, POST /v1/admin/settings stores the change and answers after the short wait', async () => {
    const down = openRedis(`redis://127.0.0.1:${await freePort()}`, { name: 'down' });
    let follow = 0;
    const app: FastifyInstance = Fastify();
    await app.register(settingsRoutes, {
      ctx: { ...ctx, redis: down },
      // Like app.ts's rotation kick: a BullMQ add, which waits for Redis too.
      onChange: () => {
        follow++;
        return down.ping();
      },
    });
    try {
      const [prior] = await h.sql<{ revision: string }[]>`
        select revision::text as revision from settings where id = 1`;
      const res = await app.inject({
        method: 'POST',
        url: '/v1/admin/settings',
        payload: { default_request_max_tokens: 321 },
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ default_request_max_tokens: 321 });
      expect(follow).toBe(1);
      const [row] = await h.sql<{ revision: string; default_request_max_tokens: number }[]>`
        select revision::text as revision, default_request_max_tokens from settings where id = 1`;
      expect(row).toEqual({
        revision: String(BigInt(prior!.revision) + 1n),
        default_request_max_tokens: 321,
      });
    } finally {
      await app.close();
      down.disconnect();
    }
  }, 30_000);
});
