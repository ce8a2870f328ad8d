// Virtual API keys, budgets and the usage ledger end to end (docs/keys-and-usage.md): the controller and
// two proxy replicas as OS processes on the devnet, keys created through the admin API, chat with the
// official openai client on both replicas. A key works at once on both; a model-limited key gets 403;
// rpm and budget hold across the two replicas under concurrent load; revoke and rotate take effect
// within a second; the ledger of a settled escrow matches its finalize document to the ngonka; and
// every shell block of docs/keys-and-usage.md runs against the same gateway.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { GNK, MINIMAX_MODEL, QWEN_MODEL } from '@gonka-gateway/devnet';
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../proxy/proxy-stack.js';
import { ADMIN_KEY, type Stack, startStack } from '../stack/stack.js';
import { REPO_ROOT } from '../support/gateway-process.js';

const run = promisify(execFile);

let s: Stack;
let escrowA: number;

const admin = async (method: string, path: string, body?: object) => {
  const res = await fetch(`${s.proxyUrls[0]}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN_KEY}`,
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(90_000),
  });
  const text = await res.text();
  return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
};

const client = (url: string, apiKey: string) =>
  new OpenAI({ apiKey, baseURL: `${url}/v1`, maxRetries: 0, timeout: 60_000 });
const ask = (url: string, apiKey: string, model = QWEN_MODEL) =>
  client(url, apiKey)
    .chat.completions.create({ model, messages: [{ role: 'user', content: 'ngonka?' }], max_tokens: 64 })
    .withResponse();
/** The HTTP status of one chat request (200 or the error's); the last error is kept for messages. */
let lastError = '';
const statusOf = (url: string, apiKey: string) =>
  ask(url, apiKey).then(
    () => 200,
    (e: unknown) => {
      lastError = e instanceof Error ? `${url}: ${e.message}` : String(e);
      return e instanceof APIError ? (e.status ?? 0) : 0;
    },
  );
const createKey = async (body: object) => {
  const res = await admin('POST', '/v1/admin/keys', body);
  expect(res.status, res.text).toBe(201);
  return res.json as { id: string; key: string };
};
/** devshard_gateway_key_rejections_total{reason} summed over both replicas. */
const rejections = async (reason: string) => {
  let n = 0;
  for (const url of s.proxyUrls) {
    const text = await (await fetch(`${url}/metrics`)).text();
    const line = new RegExp(`^devshard_gateway_key_rejections_total\\{reason="${reason}"\\} (\\d+)$`, 'm');
    n += Number(line.exec(text)?.[1] ?? 0);
  }
  return n;
};
/** Polls until `check` holds; returns how long it took (ms). */
const timeUntil = async (check: () => Promise<boolean>, timeoutMs = 5_000) => {
  const started = performance.now();
  await expect.poll(check, { timeout: timeoutMs, interval: 20 }).toBe(true);
  return performance.now() - started;
};

beforeAll(async () => {
  s = await startStack();
  const created = await admin('POST', '/v1/admin/escrows', {
    amount: (5n * GNK).toString(),
    model_id: QWEN_MODEL,
    chain_id: s.chainId,
    private_key_env: 'CREATOR_KEY',
    register: true,
  });
  expect(created.status, created.text).toBe(200);
  escrowA = created.json.escrow_id;
  const set = await admin('POST', '/v1/admin/settings', {
    model_limits: [
      { model_id: QWEN_MODEL, access_mode: 'api_key' },
      { model_id: MINIMAX_MODEL, access_mode: 'api_key' },
    ],
  });
  expect(set.status, set.text).toBe(200);
  // Served by one replica, forwarded by the other once its pool snapshot has the escrow (re-read
  // every 500 ms): until then that replica answers 404 for the model, whatever the key.
  for (const url of s.proxyUrls) {
    await waitFor('the escrow serving', async () => (await statusOf(url, ADMIN_KEY)) === 200, 60_000);
  }
}, 180_000);

afterAll(async () => {
  await s?.close();
}, 60_000);

describe('virtual keys on two replicas', () => {
  it('a key created through the API works at once on both replicas', async () => {
    const { key } = await createKey({ name: 'fresh' });
    // The very first request, on the replica that did not forward the create.
    const first = await statusOf(s.proxyUrls[1], key);
    const second = await statusOf(s.proxyUrls[0], key);
    expect(first, lastError).toBe(200);
    expect(second, lastError).toBe(200);
  }, 60_000);

  it('a key limited to one model gets 403 in the OpenAI shape on another', async () => {
    const { key } = await createKey({ name: 'minimax-only', models: [MINIMAX_MODEL] });
    for (const url of s.proxyUrls) {
      const error = await ask(url, key).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(APIError);
      expect(error).toMatchObject({
        status: 403,
        code: 'model_not_allowed',
        type: 'permission_error',
        param: 'model',
      });
    }
  }, 60_000);

  it('rpm holds across both replicas under concurrent load, with Retry-After and x-ratelimit headers', async () => {
    const { key } = await createKey({ name: 'rpm-4', rpm: 4 });
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        ask(s.proxyUrls[i % 2]!, key).then(
          ({ response }) => ({ status: 200, headers: response.headers }),
          (e: APIError) => ({ status: e.status, headers: e.headers, code: e.code }),
        ),
      ),
    );
    const ok = results.filter((r) => r.status === 200);
    const limited = results.filter((r) => r.status === 429);
    const statuses = JSON.stringify(results.map((r) => [r.status, 'code' in r ? r.code : null]));
    expect(ok, statuses).toHaveLength(4);
    expect(limited, statuses).toHaveLength(6);
    for (const r of limited) {
      expect(r).toMatchObject({ code: 'rate_limit_exceeded' });
      expect(Number(r.headers?.get('retry-after'))).toBeGreaterThan(0);
      expect(r.headers?.get('x-ratelimit-limit-requests')).toBe('4');
      expect(r.headers?.get('x-ratelimit-remaining-requests')).toBe('0');
    }
    // Each refusal is counted by reason on the replica that refused it (bounded labels, no key id).
    expect(await rejections('rpm')).toBe(6);
    for (const r of ok) expect(r.headers?.get('x-ratelimit-limit-requests')).toBe('4');
    expect(ok.map((r) => Number(r.headers?.get('x-ratelimit-remaining-requests'))).sort()).toEqual([
      0, 1, 2, 3,
    ]);
  }, 90_000);

  it('a budget holds across both replicas under concurrent load: spend never passes it', async () => {
    const [row] = await s.sql<{ price: string }[]>`
      select chain_row->>'token_price' as price from escrows where escrow_id = ${escrowA}`;
    const price = BigInt(row!.price);
    // One request's reservation: (⌈body bytes / 4⌉ + max_tokens) × price; room for about three.
    const body = JSON.stringify({
      model: QWEN_MODEL,
      messages: [{ role: 'user', content: 'ngonka?' }],
      max_tokens: 64,
    });
    const reservation = BigInt(Math.ceil(Buffer.byteLength(body) / 4) + 64) * price;
    const budget = reservation * 3n + reservation / 2n;
    const { id, key } = await createKey({
      name: 'budget',
      budget_ngonka: budget.toString(),
      budget_period: 'daily',
    });
    let served = 0;
    const refusals: APIError[] = [];
    for (let wave = 0; wave < 6 && refusals.length === 0; wave++) {
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          ask(s.proxyUrls[i % 2]!, key).then(
            () => undefined,
            (e: APIError) => e,
          ),
        ),
      );
      served += results.filter((r) => r === undefined).length;
      refusals.push(...results.filter((r): r is APIError => r !== undefined));
    }
    expect(served).toBeGreaterThanOrEqual(3);
    expect(refusals.length).toBeGreaterThan(0);
    expect(await rejections('budget')).toBe(refusals.length);
    for (const e of refusals)
      expect(e).toMatchObject({ status: 429, code: 'insufficient_quota', type: 'insufficient_quota' });
    // Every served request's real cost lands in the ledger; together they stay within the budget.
    await expect
      .poll(
        async () =>
          (await s.sql`select 1 from usage_records where key_id = ${`key-${id}`} and cost_final`).length,
        { timeout: 30_000, interval: 200 },
      )
      .toBe(served);
    const [spent] = await s.sql<{ cost: string }[]>`
      select coalesce(sum(cost), 0)::text as cost from usage_records where key_id = ${`key-${id}`}`;
    expect(BigInt(spent!.cost)).toBeGreaterThan(0n);
    expect(BigInt(spent!.cost)).toBeLessThanOrEqual(budget);
    // The admin view follows the real cost once the rows are final (the counter is corrected).
    await expect
      .poll(async () => (await admin('GET', `/v1/admin/keys/${id}`)).json.spend_ngonka, { timeout: 10_000 })
      .toBe(spent!.cost);
  }, 120_000);

  it('revoke and rotate take effect within a second on both replicas; rotation keeps id and spend', async () => {
    const { id, key } = await createKey({ name: 'rotating' });
    for (const url of s.proxyUrls) expect(await statusOf(url, key)).toBe(200);
    const before = (await admin('GET', `/v1/admin/keys/${id}`)).json;
    const rotated = await admin('POST', `/v1/admin/keys/${id}/rotate`);
    expect(rotated.json.id).toBe(id);
    const rotateMs = await timeUntil(async () => {
      const codes = await Promise.all(s.proxyUrls.map((u) => statusOf(u, key)));
      return codes.every((c) => c === 401);
    });
    for (const url of s.proxyUrls) expect(await statusOf(url, rotated.json.key)).toBe(200);
    const after = (await admin('GET', `/v1/admin/keys/${id}`)).json;
    expect(BigInt(after.spend_ngonka)).toBeGreaterThanOrEqual(BigInt(before.spend_ngonka));

    await admin('POST', `/v1/admin/keys/${id}/revoke`);
    const revokeMs = await timeUntil(async () => {
      const codes = await Promise.all(s.proxyUrls.map((u) => statusOf(u, rotated.json.key)));
      return codes.every((c) => c === 401);
    });
    console.info(
      `keys: old secret refused on both replicas ${rotateMs.toFixed(0)} ms after rotate, revoked key ${revokeMs.toFixed(0)} ms after revoke`,
    );
    // The bound is the replicas' 1 s re-read (pub/sub makes it sooner); the polls above allow 5 s so a
    // loaded machine reports a number instead of failing on speed.
  }, 60_000);

  it("the ledger's totals for a settled escrow match its finalize document to the ngonka", async () => {
    const id = String(escrowA);
    // Finalize right after traffic: the last records may still be at their reservation (their Finish
    // rides in the finalize's own diffs); the reconciliation settles them from the signed diffs.
    const served = [];
    for (const url of s.proxyUrls) served.push(await statusOf(url, ADMIN_KEY));
    expect(served).toEqual([200, 200]);
    let doc = await admin('POST', `/devshard/${id}/v1/finalize`);
    for (let i = 0; i < 60 && doc.status === 409; i++) {
      await new Promise((r) => setTimeout(r, 500));
      doc = await admin('POST', `/devshard/${id}/v1/finalize`);
    }
    expect(doc.status, doc.text).toBe(200);
    const settle = await admin('POST', `/v1/admin/devshards/${id}/settle`, {
      private_key_env: 'CREATOR_KEY',
    });
    expect(settle.status, settle.text).toBe(202);
    await expect
      .poll(async () => (await admin('GET', `/v1/admin/devshards/${id}`)).json.state, {
        timeout: 60_000,
        interval: 500,
      })
      .toBe('settled');
    const hostsCost = (doc.json.host_stats as { cost: string | number }[]).reduce(
      (a, h) => a + BigInt(h.cost),
      0n,
    );
    // Every served request's record has arrived (the usage writers batch them).
    const startedHere = (
      await s.sql<{ n: string }[]>`
      select count(*)::text as n from usage_records where escrow_id = ${id}`
    )[0]!.n;
    expect(Number(startedHere)).toBeGreaterThan(10);
    const rec = (await admin('GET', `/v1/admin/usage/escrows/${id}/reconciliation`)).json;
    console.info(`keys: reconciliation of escrow ${id} corrected ${rec.corrected_records} record(s)`);
    expect(rec).toMatchObject({
      state: 'settled',
      hosts_cost_ngonka: hostsCost.toString(),
      ledger_cost_ngonka: hostsCost.toString(),
      difference_ngonka: '0',
      matches: true,
      explaining_records: [],
      unrecorded_inferences: [],
    });
    const totals = (await admin('GET', `/v1/admin/usage?escrow=${id}`)).json.total;
    expect(totals.unfinalized).toBe(0);
    // Budgets follow the corrected ledger: each budgeted key's enforced spend is its records' sum.
    const keys = (await admin('GET', '/v1/admin/keys')).json.data as {
      id: string;
      budget_ngonka: string | null;
      spend_ngonka: string;
    }[];
    for (const k of keys.filter((x) => x.budget_ngonka !== null)) {
      const [sum] = await s.sql<{ cost: string }[]>`
        select coalesce(sum(cost), 0)::text as cost from usage_records where key_id = ${`key-${k.id}`}`;
      expect(k.spend_ngonka).toBe(sum!.cost);
    }
    expect(totals.cost_ngonka).toBe(hostsCost.toString());
  }, 150_000);

  it('docs/keys-and-usage.md: every sh block runs, in order, against this gateway', async () => {
    // Escrow A is settled; a second one serves the doc's chat requests.
    const created = await admin('POST', '/v1/admin/escrows', {
      amount: (5n * GNK).toString(),
      model_id: QWEN_MODEL,
      chain_id: s.chainId,
      private_key_env: 'CREATOR_KEY',
      register: true,
    });
    expect(created.status, created.text).toBe(200);
    for (const url of s.proxyUrls) {
      await expect
        .poll(async () => (await statusOf(url, ADMIN_KEY)) === 200, { timeout: 60_000, interval: 250 })
        .toBe(true);
    }
    const markdown = await readFile(join(REPO_ROOT, 'docs/keys-and-usage.md'), 'utf8');
    const blocks = [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
    expect(blocks.length).toBeGreaterThanOrEqual(8);
    const dir = await mkdtemp(join(tmpdir(), 'keys-doc-'));
    try {
      const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', blocks.join('\n')], {
        cwd: dir,
        env: {
          PATH: process.env.PATH,
          GATEWAY: s.proxyUrls[1],
          ADMIN_KEY,
          MODEL: QWEN_MODEL,
          ESCROW_ID: String(escrowA),
        },
        timeout: 120_000,
      });
      expect(stdout).toMatch(/^created key \d+$/m);
      expect(stdout).toContain('chat ok');
      expect(stdout).toContain('"prefix":"sk-');
      expect(stdout).toContain('"read_only":true');
      expect(stdout).toContain('"rpm":120,"tpm":null');
      expect(stdout).toContain('old key: 401');
      expect(stdout).toMatch(/^request_id,at,key,model,/m);
      expect(stdout).toContain('"matches":true');
      expect(stdout).toContain('{"retention_days":90,"metrics_top_keys":20}');
      expect(stdout).toMatch(/^revoked$/m);
      expect(stdout).toContain('revoked key: 401');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 240_000);
});
