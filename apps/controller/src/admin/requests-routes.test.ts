// GET /v1/requests/{request_id} against real Postgres: a ledger row with the attempts the proxy sent
// (a hedge that served after the first attempt missed its first-token deadline), a row without
// attempts, the 404 of an unknown id and the admin key.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminHeaders,
  type ControllerHarness,
  startControllerHarness,
} from '../testing/controller-harness.js';

const attempts = [
  {
    escrow_id: '7',
    nonce: '11',
    participant: 'gonka1slow',
    hedge: false,
    started_ms: 0.4,
    receipt_ms: 38.2,
    ended_ms: 2_051,
    deadlines_hit: ['first_token'],
    outcome: 'cancelled',
    error: 'first_token_timeout',
    cost: '0',
    cost_final: false,
  },
  {
    escrow_id: '7',
    nonce: '13',
    participant: 'gonka1fast',
    hedge: true,
    started_ms: 2_000,
    receipt_ms: 2_031,
    first_token_ms: 2_200,
    ended_ms: 3_410,
    deadlines_hit: [],
    outcome: 'served',
    output_tokens: 20,
    cost: '4200',
    cost_final: true,
    burned_nonces: ['12'],
  },
];

describe('GET /v1/requests/{request_id}', () => {
  let h: ControllerHarness;
  let app: FastifyInstance;
  beforeAll(async () => {
    h = await startControllerHarness();
    app = await h.build({ jobs: false });
    await h.sql`
      insert into usage_records (request_id, key_id, model, escrow_id, nonce, nonces, input_tokens, output_tokens,
                                 cost, cost_final, status, total_ms, ttft_ms, replica_id, at, attempts)
      values ('req-hedged', 'key-12', 'm1', 7, 13, '11,12,13', 10, 20, 4200, true, 200, 3410, 2200, 'proxy-a',
              '2026-11-01T10:00:00Z', ${h.sql.json(attempts)}),
             ('req-plain', 'env', 'm1', null, null, '', 5, 0, null, false, 503, 12, null, 'proxy-b',
              '2026-11-01T10:00:01Z', null)`;
  });
  afterAll(async () => {
    await h?.close();
  });

  const get = (id: string, headers: Record<string, string> = adminHeaders()) =>
    app.inject({ method: 'GET', url: `/v1/requests/${encodeURIComponent(id)}`, headers });

  it('answers the ledger row with every attempt', async () => {
    const res = await get('req-hedged');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      request_id: 'req-hedged',
      key_id: '12',
      model: 'm1',
      escrow_id: '7',
      nonces: ['11', '12', '13'],
      status: 200,
      input_tokens: 10,
      output_tokens: 20,
      cost: '4200',
      cost_final: true,
      total_ms: 3410,
      ttft_ms: 2200,
      replica_id: 'proxy-a',
      at: '2026-11-01T10:00:00.000Z',
      attempts,
    });
    expect(Date.parse(body.created_at)).not.toBeNaN();
  });

  it('answers a row without attempts, with nulls where nothing was spent', async () => {
    expect((await get('req-plain')).json()).toMatchObject({
      key_id: 'env',
      escrow_id: null,
      nonces: [],
      cost: null,
      cost_final: false,
      ttft_ms: null,
      status: 503,
      attempts: null,
    });
  });

  it('answers 404 for an unknown id and 401 without the admin key', async () => {
    const unknown = await get('req-none');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error).toMatchObject({ code: 'not_found', param: 'request_id' });
    const anonymous = await get('req-hedged', {});
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json().error.code).toBe('missing_api_key');
    expect((await get('req-hedged', { authorization: 'Bearer sk-wrong' })).statusCode).toBe(401);
  });

  it('is described in the OpenAPI document as an admin-key operation, with the hosts routes', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect(doc.paths['/v1/requests/{request_id}'].get.security).toEqual([{ adminKey: [] }]);
    expect(doc.paths['/v1/admin/hosts'].get.security).toEqual([{ adminKey: [] }]);
    expect(doc.paths['/v1/admin/hosts/{id}/lift'].post.security).toEqual([{ adminKey: [] }]);
  });
});
