// /v1/admin/keys against real Postgres and Redis (the devnet is the harness's chain; unused here).
import { hashApiKey } from '@gonka-gateway/shared';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminHeaders,
  type ControllerHarness,
  startControllerHarness,
} from '../testing/controller-harness.js';

describe('admin keys', () => {
  let h: ControllerHarness;
  let app: FastifyInstance;
  beforeAll(async () => {
    h = await startControllerHarness();
    app = await h.build({ jobs: false, config: { DEVSHARD_API_KEYS: `sk-${'ab'.repeat(24)}` } });
  });
  afterAll(async () => {
    await h?.close();
  });

  const call = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
    app.inject({ method, url, headers: adminHeaders(), ...(payload ? { payload } : {}) });

  it('creates a key shown once, stored only as its SHA-256, listed with limits and never the secret', async () => {
    const created = await call('POST', '/v1/admin/keys', {
      name: 'team-a',
      models: ['m1'],
      budget_ngonka: '5000000',
      budget_period: 'daily',
      rpm: 10,
      metadata: { team: 'a' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const { key, id, prefix } = created.json();
    expect(key).toMatch(/^sk-[0-9a-f]{48}$/);
    expect(key.startsWith(prefix.replace('…', ''))).toBe(true);
    const [row] = await h.sql<{ key_hash: Buffer }[]>`select key_hash from api_keys where id = ${id}::bigint`;
    expect(Buffer.from(row!.key_hash).equals(hashApiKey(key))).toBe(true);

    const list = await call('GET', '/v1/admin/keys');
    expect(list.statusCode).toBe(200);
    expect(list.body).not.toContain(key);
    const data = list.json().data as { id: string; read_only: boolean }[];
    expect(data[0]).toMatchObject({ id: 'env', read_only: true });
    expect(data.find((k) => k.id === id)).toMatchObject({
      name: 'team-a',
      models: ['m1'],
      budget_ngonka: '5000000',
      budget_period: 'daily',
      rpm: 10,
      tpm: null,
      status: 'active',
      spend_ngonka: '0',
      budget_remaining_ngonka: '5000000',
      metadata: { team: 'a' },
    });
    const audit = await h.sql<
      { request: unknown }[]
    >`select request from admin_audit_log where action = 'POST /v1/admin/keys'`;
    expect(JSON.stringify(audit)).not.toContain(key);
  });

  it('names the field of bad input and changes nothing', async () => {
    const before = await h.sql`select count(*)::int as n from api_keys`;
    for (const [body, field] of [
      [{ name: 'x', rpm: 0 }, 'rpm'],
      [{ name: 'x', budget_period: 'hourly' }, 'budget_period'],
      [{ name: 'x', budget_ngonka: '9007199254740992' }, 'budget_ngonka'],
      [{ name: 'x', expires_at: 'tomorrow' }, 'expires_at'],
      [{ name: 'x', models: [] }, 'models'],
      [{ rpm: 5 }, 'name'],
    ] as const) {
      const res = await call('POST', '/v1/admin/keys', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(JSON.stringify(res.json().error), JSON.stringify(body)).toContain(field);
    }
    expect(await h.sql`select count(*)::int as n from api_keys`).toEqual(before);
  });

  it('patches limits (null clears), rotates to a new secret with the same id, revokes; env is read-only', async () => {
    const { id, key } = (await call('POST', '/v1/admin/keys', { name: 'rot', tpm: 1000 })).json();
    const patched = await call('PATCH', `/v1/admin/keys/${id}`, { tpm: null, max_concurrent: 2 });
    expect(patched.json()).toMatchObject({ id, tpm: null, max_concurrent: 2 });
    const rotated = await call('POST', `/v1/admin/keys/${id}/rotate`);
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json().id).toBe(id);
    expect(rotated.json().key).not.toBe(key);
    expect(rotated.json().rotated_at).not.toBeNull();
    const revoked = await call('POST', `/v1/admin/keys/${id}/revoke`);
    expect(revoked.json()).toMatchObject({ id, status: 'revoked' });
    expect((await call('POST', `/v1/admin/keys/${id}/rotate`)).statusCode).toBe(409);
    expect((await call('PATCH', '/v1/admin/keys/env', { rpm: 1 })).statusCode).toBe(403);
    expect((await call('GET', '/v1/admin/keys/999999')).statusCode).toBe(404);
  });
});
