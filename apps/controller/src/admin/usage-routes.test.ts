// /v1/admin/usage against real Postgres: totals and groups over hand-written ledger rows, CSV, the
// reconciliation of a finalized escrow (match, and a mismatch explained by the unfinalized record),
// retention with the purge job's function, and the bounded per-key spend metrics.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminHeaders,
  type ControllerHarness,
  startControllerHarness,
} from '../testing/controller-harness.js';
import { purgeExpiredUsage } from '../usage/usage-retention.js';

describe('admin usage ledger', () => {
  let h: ControllerHarness;
  let app: FastifyInstance;
  beforeAll(async () => {
    h = await startControllerHarness();
    app = await h.build({ jobs: false });
  });
  afterAll(async () => {
    await h?.close();
  });

  const call = (method: 'GET' | 'POST', url: string, payload?: object) =>
    app.inject({ method, url, headers: adminHeaders(), ...(payload ? { payload } : {}) });
  const record = (
    id: string,
    o: {
      key: string;
      model: string;
      escrow: string;
      nonce: number;
      cost: string;
      final?: boolean;
      status?: number;
      at: string;
    },
  ) => h.sql`
    insert into usage_records (request_id, key_id, model, escrow_id, nonce, nonces, input_tokens, output_tokens,
                               cost, cost_final, status, total_ms, replica_id, at)
    values (${id}, ${o.key}, ${o.model}, ${o.escrow}, ${o.nonce}, ${String(o.nonce)}, 10, 20, ${o.cost},
            ${o.final ?? true}, ${o.status ?? 200}, 5, 'r1', ${o.at})`;

  beforeAll(async () => {
    await record('a', {
      key: 'key-1',
      model: 'm1',
      escrow: '7',
      nonce: 1,
      cost: '100',
      at: '2026-11-01T10:00:00Z',
    });
    await record('b', {
      key: 'key-1',
      model: 'm2',
      escrow: '7',
      nonce: 2,
      cost: '250',
      at: '2026-11-02T10:00:00Z',
    });
    await record('c', {
      key: 'env',
      model: 'm1',
      escrow: '8',
      nonce: 1,
      cost: '40',
      status: 502,
      at: '2026-11-02T11:00:00Z',
    });
    await record('d', {
      key: 'key-2',
      model: 'm1',
      escrow: '8',
      nonce: 2,
      cost: '900',
      final: false,
      at: '2026-11-03T00:00:00Z',
    });
  });

  it('totals with filters and groups, as JSON and CSV', async () => {
    const all = await call('GET', '/v1/admin/usage');
    expect(all.json().total).toEqual({
      group: null,
      requests: 4,
      input_tokens: 40,
      output_tokens: 80,
      cost_ngonka: '1290',
      errors: 1,
      unfinalized: 1,
    });
    const byKey = await call('GET', '/v1/admin/usage?group_by=key');
    expect(
      byKey.json().data.map((d: { group: string; cost_ngonka: string }) => [d.group, d.cost_ngonka]),
    ).toEqual([
      ['env', '40'],
      ['1', '350'],
      ['2', '900'],
    ]);
    const day = await call('GET', '/v1/admin/usage?group_by=day&model=m1&from=2026-11-02T00:00:00Z');
    expect(day.json().data.map((d: { group: string; requests: number }) => [d.group, d.requests])).toEqual([
      ['2026-11-02', 1],
      ['2026-11-03', 1],
    ]);
    expect((await call('GET', '/v1/admin/usage?key=1&escrow=7')).json().total.cost_ngonka).toBe('350');
    const csv = await call('GET', '/v1/admin/usage?group_by=escrow&format=csv');
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    expect(csv.body).toBe(
      'group,requests,input_tokens,output_tokens,cost_ngonka,errors,unfinalized\r\n7,2,20,40,350,0,0\r\n8,2,20,40,940,1,1\r\n',
    );
    const records = await call('GET', '/v1/admin/usage/records?key=env&format=csv');
    expect(records.body.split('\r\n')[1]).toMatch(
      /^c,2026-11-02T11:00:00.000Z,env,m1,8,1,1,10,20,40,true,502,/,
    );
    const bad = await call('GET', '/v1/admin/usage?group_by=week');
    expect(bad.statusCode).toBe(400);
    expect(JSON.stringify(bad.json())).toContain('group_by');
    const backwards = await call('GET', '/v1/admin/usage?from=2026-11-03T00:00:00Z&to=2026-11-01T00:00:00Z');
    expect(backwards.json().error.param).toBe('from');
  });

  it("reconciles a finalized escrow's ledger with the hosts' cost of its finalize document", async () => {
    const escrow = (id: string) => h.sql`
      insert into escrows (escrow_id, chain_id, model_id, creator, amount, epoch_index, version, state, chain_row)
      values (${id}, 'c', 'm1', 'gonka1x', 1000000, 1, 'v5', 'finalized', '{}'::jsonb)`;
    const doc = (id: string, costs: number[]) => h.sql`
      insert into finalize_documents (escrow_id, nonce, version, state_root, fees, document)
      values (${id}, 9, 'v5', ${Buffer.alloc(32)}, 30,
              ${JSON.stringify({ escrow_id: id, fees: 30, host_stats: costs.map((cost, slot_id) => ({ slot_id, cost })) })}::text::jsonb)`;
    await escrow('7');
    await doc('7', [300, 50]);
    await escrow('8');
    await doc('8', [600, 340]);
    const seven = await call('GET', '/v1/admin/usage/escrows/7/reconciliation');
    expect(seven.json()).toMatchObject({
      hosts_cost_ngonka: '350',
      ledger_cost_ngonka: '350',
      difference_ngonka: '0',
      matches: true,
      explaining_records: [],
    });
    const eight = (await call('GET', '/v1/admin/usage/escrows/8/reconciliation')).json();
    expect(eight).toMatchObject({ hosts_cost_ngonka: '940', matches: true });
    await h.sql`update finalize_documents set document = jsonb_set(document, '{host_stats,0,cost}', '500') where escrow_id = 8`;
    const off = (await call('GET', '/v1/admin/usage/escrows/8/reconciliation')).json();
    expect(off).toMatchObject({ difference_ngonka: '-100', matches: false });
    expect(off.explaining_records.map((r: { request_id: string }) => r.request_id)).toEqual(['d']);
    expect((await call('GET', '/v1/admin/usage/escrows/99/reconciliation')).statusCode).toBe(404);
  });

  it('purges records past the retention; 0 keeps everything', async () => {
    const now = new Date('2026-11-03T12:00:00Z');
    expect(await purgeExpiredUsage(h.sql, now)).toEqual({ deleted: 0, before: null });
    const set = await call('POST', '/v1/admin/usage/settings', { retention_days: 1 });
    expect(set.json()).toEqual({ retention_days: 1, metrics_top_keys: 10 });
    expect((await call('POST', '/v1/admin/usage/settings', { retention_days: -1 })).statusCode).toBe(400);
    expect((await purgeExpiredUsage(h.sql, now)).deleted).toBe(3);
    expect((await purgeExpiredUsage(h.sql, now)).deleted).toBe(0);
    expect((await call('GET', '/v1/admin/usage')).json().total.requests).toBe(1);
    await call('POST', '/v1/admin/usage/settings', { retention_days: 0 });
  });

  it('exports spend per key bounded to the top keys, the rest as other', async () => {
    const ids: string[] = [];
    for (const name of ['k1', 'k2', 'k3']) {
      ids.push(
        (await call('POST', '/v1/admin/keys', { name, budget_ngonka: '1000', budget_period: 'daily' })).json()
          .id,
      );
    }
    const at = new Date().toISOString();
    await record('s1', { key: `key-${ids[0]}`, model: 'm1', escrow: '9', nonce: 1, cost: '300', at });
    await record('s2', { key: `key-${ids[1]}`, model: 'm1', escrow: '9', nonce: 2, cost: '200', at });
    await record('s3', { key: `key-${ids[2]}`, model: 'm1', escrow: '9', nonce: 3, cost: '100', at });
    await call('POST', '/v1/admin/usage/settings', { metrics_top_keys: 2 });
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    const lines = text.split('\n').filter((l) => l.startsWith('devshard_gateway_key_'));
    expect(lines).toContain(`devshard_gateway_key_spend_ngonka{key="${ids[0]}"} 300`);
    expect(lines).toContain(`devshard_gateway_key_spend_ngonka{key="${ids[1]}"} 200`);
    expect(lines).toContain('devshard_gateway_key_spend_ngonka{key="other"} 100');
    expect(lines).toContain(`devshard_gateway_key_budget_remaining_ngonka{key="${ids[0]}"} 700`);
    expect(lines.filter((l) => l.includes(`key="${ids[2]}"`))).toEqual([]);
  });
});
