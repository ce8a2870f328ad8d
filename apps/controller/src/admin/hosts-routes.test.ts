// /v1/admin/hosts against real Redis and Postgres: the listing of the proxies' host-health records
// (sorted, an expired quarantine shown as probation), the operator's lift with its audit row and its
// announcement, and the 404s and 401s.
import { closeRedis, openRedis, redisKeys, writeHostHealth } from '@gonka-gateway/shared';
import { deleteKeysWithPrefix } from '@gonka-gateway/shared/testing';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  adminHeaders,
  type ControllerHarness,
  startControllerHarness,
} from '../testing/controller-harness.js';

const QWEN = 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8';
const SMALL = 'Qwen/Qwen3-32B';
const A = 'gonka1aaaa';
const B = 'gonka1bbbb';

describe('admin hosts', () => {
  let h: ControllerHarness;
  let app: FastifyInstance;
  beforeAll(async () => {
    h = await startControllerHarness();
    app = await h.build({ jobs: false });
  });
  afterAll(async () => {
    await h?.close();
  });
  beforeEach(async () => {
    await deleteKeysWithPrefix(h.redis.redis, `${h.redis.prefix}host`);
  });

  const keys = () => redisKeys(h.redis.prefix);

  async function seed() {
    const now = Date.now();
    await writeHostHealth(h.redis.redis, keys(), [
      {
        participant: B,
        model: QWEN,
        add: { attempts: 10, successes: 6, failures: 4, receipt_timeouts: 3 },
        set: {
          state: 'quarantined',
          quarantinedUntilMs: now + 60_000,
          timesQuarantined: 2,
          consecutiveFailures: 4,
          lastError: 'receipt_timeout',
          lastErrorAtMs: now - 1_000,
          receiptMs: 950,
        },
      },
      { participant: A, model: QWEN, add: { attempts: 5, successes: 5 }, set: { tokensPerSecond: 41.5 } },
      {
        participant: A,
        model: SMALL,
        add: { attempts: 1, failures: 1 },
        set: {
          state: 'quarantined',
          quarantinedUntilMs: now - 1,
          timesQuarantined: 1,
          lastError: 'http_503',
        },
      },
    ]);
  }

  it('lists every record by model then participant; an expired quarantine shows as probation', async () => {
    await seed();
    const res = await app.inject({ method: 'GET', url: '/v1/admin/hosts', headers: adminHeaders() });
    expect(res.statusCode).toBe(200);
    const data = res.json().data as Record<string, unknown>[];
    expect(data.map((d) => [d.model, d.participant, d.state])).toEqual([
      [QWEN, A, 'healthy'],
      [QWEN, B, 'quarantined'],
      [SMALL, A, 'probation'],
    ]);
    expect(data[0]).toMatchObject({
      quarantined_until: null,
      last_error: null,
      last_error_at: null,
      receipt_ms: null,
      tokens_per_s: 41.5,
      lifted_at: null,
    });
    expect(data[1]).toMatchObject({
      times_quarantined: 2,
      consecutive_failures: 4,
      last_error: 'receipt_timeout',
      receipt_ms: 950,
      first_token_ms: null,
    });
    expect(Date.parse(data[1]?.quarantined_until as string)).toBeGreaterThan(Date.now());
    expect(Date.parse(data[1]?.updated_at as string)).toBeGreaterThan(Date.now() - 60_000);
    expect(data[1]?.counters).toMatchObject({
      attempts: 10,
      successes: 6,
      failures: 4,
      receipt_timeouts: 3,
      probes: 0,
    });
  });

  it('lifts every model of a participant, audits it and announces each record', async () => {
    await seed();
    const sub = openRedis(h.redis.url, { name: 'hosts-routes-test-sub' });
    const messages: string[] = [];
    sub.on('message', (_channel: string, message: string) => messages.push(message));
    await sub.subscribe(keys().hostHealthChanges);
    try {
      // No body and no content type.
      const res = await app.inject({
        method: 'POST',
        url: `/v1/admin/hosts/${A}/lift`,
        headers: adminHeaders(),
      });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ lifted: 2 });
      await expect.poll(() => messages.length).toBe(2);
      expect(messages.sort()).toEqual([`${QWEN}|${A}`, `${SMALL}|${A}`]);
    } finally {
      await closeRedis(sub);
    }
    const data = (await app.inject({ method: 'GET', url: '/v1/admin/hosts', headers: adminHeaders() })).json()
      .data as Record<string, unknown>[];
    const small = data.find((d) => d.model === SMALL)!;
    expect(small).toMatchObject({
      state: 'healthy',
      quarantined_until: null,
      consecutive_failures: 0,
      times_quarantined: 1,
    });
    expect(Date.parse(small.lifted_at as string)).toBeGreaterThan(Date.now() - 60_000);
    expect(data.find((d) => d.participant === B)?.state).toBe('quarantined');

    const [audit] = await h.sql<{ actor: string; target: string; request: unknown; status_code: number }[]>`
      select actor, target, request, status_code from admin_audit_log
       where action = 'POST /v1/admin/hosts/:id/lift' order by id desc limit 1`;
    expect(audit).toMatchObject({ target: A, request: {}, status_code: 200 });
    expect(audit?.actor).toMatch(/^admin:[0-9a-f]{12}$/);
  });

  it('lifts one model; accepts an empty body under any content type', async () => {
    await seed();
    const lift = (payload: string, contentType: string) =>
      app.inject({
        method: 'POST',
        url: `/v1/admin/hosts/${B}/lift`,
        headers: adminHeaders({ 'content-type': contentType }),
        payload,
      });
    for (const ct of ['application/json', 'text/plain', 'application/octet-stream']) {
      expect((await lift('', ct)).json()).toEqual({ lifted: 1 });
    }
    expect((await lift(JSON.stringify({ model: QWEN }), 'application/json')).json()).toEqual({ lifted: 1 });
    const [audit] = await h.sql<{ target: string; request: unknown }[]>`
      select target, request from admin_audit_log where action = 'POST /v1/admin/hosts/:id/lift'
       order by id desc limit 1`;
    expect(audit).toEqual({ target: B, request: { model: QWEN } });
  });

  it('answers 404 when nothing matched, 400 for a bad body, 401 without the admin key', async () => {
    await seed();
    const post = (participant: string, payload?: object | string, headers = adminHeaders()) =>
      app.inject({
        method: 'POST',
        url: `/v1/admin/hosts/${participant}/lift`,
        headers: typeof payload === 'string' ? { ...headers, 'content-type': 'application/json' } : headers,
        ...(payload === undefined ? {} : { payload }),
      });
    const unknown = await post('gonka1nobody');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error).toMatchObject({ code: 'not_found', param: 'id' });
    const wrongModel = await post(A, { model: 'no/such-model' });
    expect(wrongModel.statusCode).toBe(404);
    expect(wrongModel.json().error).toMatchObject({ code: 'not_found', param: 'model' });
    const extra = await post(A, { model: QWEN, force: true });
    expect(extra.statusCode).toBe(400);
    expect(extra.json().error.param).toBe('force');
    expect((await post(A, '{not json')).statusCode).toBe(400);
    const anonymous = await post(A, undefined, {} as ReturnType<typeof adminHeaders>);
    expect(anonymous.statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/v1/admin/hosts' })).statusCode).toBe(401);
    // Nothing was lifted by the refused calls.
    const data = (await app.inject({ method: 'GET', url: '/v1/admin/hosts', headers: adminHeaders() })).json()
      .data as Record<string, unknown>[];
    expect(data.filter((d) => d.participant === A).map((d) => d.lifted_at)).toEqual([null, null]);
  });

  it('lists nothing when no proxy wrote a record', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/admin/hosts', headers: adminHeaders() });
    expect(res.json()).toEqual({ data: [] });
  });
});
