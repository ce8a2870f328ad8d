// The gateway through `./start` rides out the outages of what it depends on, one after another, while
// the public node API and the chain REST answer 503 for the whole run (devnet faults): under
// continuous load (a few clients, one escrow, through HAProxy), the replica that owns the escrow is
// SIGKILLed (./start restarts it), then the controller, then Redis is restarted empty, then Postgres
// is restarted (a private redis-server and a private PostgreSQL server of this test, restarted by pid;
// the machine's own are never touched). Asserted: ≥ 95 % of the requests served while it runs; every
// error a client sees, from the gateway or the load balancer, is an OpenAI JSON error with a
// retryable status; after each event service is whole again within 15 s; afterwards (the node back)
// finalize and settle leave the escrow's deposit = host payouts + fees + refund, and the creator gets
// exactly the refund. CI-sized here (events 9 s apart, a 3 s lease TTL); `pnpm test:outages` runs the
// long version (OUTAGE_RUN=long: ./start's default lease TTL, 28 s between events, about two minutes
// of load with the node down). The summary (requests, failures by status and code, recovery after
// each event) is printed either way.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BASE_DENOM, createChainClient, queryBalance, queryEscrow } from '@gonka-gateway/chain';
import { findHaproxy } from '@gonka-gateway/deploy';
import { type PrivateRedis, startPrivateRedis } from '@gonka-gateway/escrow-runtime/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { settledEvent, txFee } from '../stack/stack.js';
import { freePort } from '../support/gateway-process.js';
import {
  type PrivatePostgres,
  privatePostgresAvailable,
  startPrivatePostgres,
} from '../support/private-postgres.js';
import { descendants, type RunningStart, runStart, waitForStartReady } from '../support/start-command.js';

const LONG = process.env.OUTAGE_RUN === 'long';
const PLAN = LONG
  ? // About two minutes of load with the node down; ./start's default lease TTL (10 s).
    { clients: 4, baselineMs: 5_000, spacingMs: 28_000, leaseTtlMs: undefined }
  : { clients: 4, baselineMs: 3_000, spacingMs: 9_000, leaseTtlMs: '3000' };
/** Service must be whole again this long after each event (docs/operator-guide.md §11). */
const RECOVERY_MS = 15_000;
/** What an OpenAI client retries (it retries 408, 409, 429 and 5xx); 409 is never a gateway outage. */
const RETRYABLE = new Set([408, 429, 500, 502, 503, 504]);
const REQUEST_TIMEOUT_MS = 30_000;

interface Outcome {
  start: number;
  end: number;
  served: boolean;
  status: number;
  /** Why a failure is not an acceptable one (transport error, HTML, a non-retryable status…). */
  bad?: string;
  code?: string;
  /** The answer's Retry-After, in ms. */
  retryAfterMs?: number;
}

function readEnvFile(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line);
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

/** One chat request as a client sees it, classified. */
async function chatOnce(url: string, key: string, model: string, t0: number): Promise<Outcome> {
  const start = Date.now() - t0;
  const done = (o: Omit<Outcome, 'start' | 'end'>): Outcome => ({ start, end: Date.now() - t0, ...o });
  let res: Response;
  let text: string;
  try {
    res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'ride it out' }], max_tokens: 24 }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    text = await res.text();
  } catch (err) {
    return done({ served: false, status: 0, bad: `transport: ${(err as Error).message}` });
  }
  if (res.status === 200) {
    try {
      const body = JSON.parse(text);
      if (body.object === 'chat.completion' && (body.choices?.[0]?.message?.content ?? '').length > 0)
        return done({ served: true, status: 200 });
    } catch {}
    return done({ served: false, status: 200, bad: `200 without a completion: ${text.slice(0, 200)}` });
  }
  let code: string | undefined;
  try {
    const body = JSON.parse(text);
    const e = body.error;
    if (
      typeof e?.message === 'string' &&
      typeof e?.type === 'string' &&
      'param' in e &&
      typeof e?.code === 'string'
    )
      code = e.code;
  } catch {}
  const json = (res.headers.get('content-type') ?? '').startsWith('application/json');
  if (!json || code === undefined)
    return done({
      served: false,
      status: res.status,
      bad: `not an OpenAI JSON error: ${text.slice(0, 200)}`,
    });
  if (!RETRYABLE.has(res.status))
    return done({
      served: false,
      status: res.status,
      code,
      bad: `status ${res.status} (${code}) is not retryable`,
    });
  const retryAfter = Number(res.headers.get('retry-after'));
  return done({
    served: false,
    status: res.status,
    code,
    ...(retryAfter > 0 ? { retryAfterMs: retryAfter * 1_000 } : {}),
  });
}

/** `key ×count` per distinct key. */
function countBy<T>(items: T[], key: (item: T) => string): string[] {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return [...counts].map(([k, n]) => `${k} ×${n}`);
}

const haproxy = findHaproxy();

describe.skipIf(!haproxy || !privatePostgresAvailable())('dependency outages through ./start', () => {
  let pg: PrivatePostgres | undefined;
  let redis: PrivateRedis | undefined;
  let start: RunningStart | undefined;
  afterAll(async () => {
    await start?.interrupt();
    await redis?.stop();
    await pg?.stop();
  }, 60_000);

  it(
    `node and chain REST down throughout; owner killed, controller killed, Redis restarted empty, Postgres restarted (${LONG ? 'long' : 'CI-sized'})`,
    async () => {
      pg = await startPrivatePostgres();
      redis = await startPrivateRedis();
      const [gatewayPort, p1, p2, controllerPort] = [
        await freePort(),
        await freePort(),
        await freePort(),
        await freePort(),
      ];
      const dataDir = mkdtempSync(join(tmpdir(), 'gw-outages-'));
      start = runStart({
        DEVNET_PORTS: 'ephemeral',
        // The demo's block time: an epoch (200 blocks) outlasts the run, so the escrow is still
        // inside its settle window afterwards (chain-and-network.md §2.6 settle rule 9).
        DEVNET_BLOCK_INTERVAL_MS: '1000',
        START_DATA_DIR: dataDir,
        START_GATEWAY_PORT: String(gatewayPort),
        DEVSHARD_PORT: String(p1),
        START_SECOND_PROXY_PORT: String(p2),
        GATEWAY_CONTROLLER_PORT: String(controllerPort),
        DATABASE_URL: pg.url('gateway'),
        REDIS_URL: redis.url,
        REDIS_KEY_PREFIX: `gwoutage:${randomBytes(4).toString('hex')}:`,
        ...(PLAN.leaseTtlMs ? { GATEWAY_LEASE_TTL_MS: PLAN.leaseTtlMs } : {}),
        CI: 'true',
      });
      const out = await waitForStartReady(start);
      const devnetLine = /devnet\s+chain REST (\S+), RPC (\S+), node (\S+)/.exec(out);
      expect(devnetLine, out).not.toBeNull();
      const [, chainRest, chainRpc, nodeUrl] = devnetLine!;
      const keys = readEnvFile(join(dataDir, 'dev.env'));
      const userKey = keys.DEVSHARD_API_KEYS!.split(',')[0]!.trim();
      const adminKey = keys.DEVSHARD_ADMIN_API_KEY!;
      const gateway = `http://127.0.0.1:${gatewayPort}`;
      const admin = async (method: string, path: string, body?: object) => {
        const res = await fetch(`${gateway}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${adminKey}`,
            ...(body ? { 'content-type': 'application/json' } : {}),
          },
          ...(body ? { body: JSON.stringify(body) } : {}),
          signal: AbortSignal.timeout(30_000),
        });
        const text = await res.text();
        return { status: res.status, json: text ? JSON.parse(text) : undefined, text };
      };
      const [escrow] = (await admin('GET', '/v1/admin/devshards')).json.data as {
        escrow_id: number;
        model_id: string;
      }[];
      expect(escrow).toBeDefined();
      const model = escrow!.model_id;

      // The public node API and the chain REST go down for the whole run.
      const faults = (body: object) =>
        fetch(`${nodeUrl}/devnet/admin/faults`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      expect((await faults({ nodeQuery: { status: 503 }, chainQuery: { status: 503 } })).status).toBe(200);
      expect((await fetch(`${nodeUrl}/v1/epochs/current/participants`)).status).toBe(503);
      expect((await fetch(`${chainRest}/productscience/inference/inference/params`)).status).toBe(503);

      // Continuous load: each client sends its next request as soon as the last one ended.
      const t0 = Date.now();
      const outcomes: Outcome[] = [];
      let loading = true;
      const clients = Array.from({ length: PLAN.clients }, async () => {
        while (loading) {
          const o = await chatOnce(gateway, userKey, model, t0);
          outcomes.push(o);
          // As the openai client does: a retryable error is retried after its Retry-After (capped).
          if (!o.served) await new Promise((r) => setTimeout(r, Math.min(o.retryAfterMs ?? 500, 2_000)));
        }
      });
      const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
      const processOf = (entry: string, env?: string) => {
        const pids = descendants(start!.child.pid!).filter((pid) => {
          try {
            const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
            const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
            return cmdline.includes(entry) && (env === undefined || environ.includes(env));
          } catch {
            return false;
          }
        });
        expect(pids, `${entry} ${env ?? ''}`).toHaveLength(1);
        return pids[0]!;
      };
      const events: { name: string; at: number }[] = [];
      const event = async (name: string, act: () => Promise<void>) => {
        events.push({ name, at: Date.now() - t0 });
        await act();
        await wait(PLAN.spacingMs - (Date.now() - t0 - events.at(-1)!.at));
      };

      await wait(PLAN.baselineMs);
      await event('owner replica killed', async () => {
        const status = (await (await fetch(`${gateway}/v1/status`)).json()) as {
          devshards: { escrow_id: string; owner: string | null }[];
        };
        const owner = status.devshards.find((d) => d.escrow_id === String(escrow!.escrow_id))?.owner;
        expect(owner).toMatch(/^start-[12]$/);
        process.kill(processOf('apps/proxy/src/main.ts', `GATEWAY_REPLICA_ID=${owner}`), 'SIGKILL');
      });
      await event('controller killed', async () => {
        process.kill(processOf('apps/controller/src/main.ts'), 'SIGKILL');
      });
      await event('Redis restarted empty', async () => {
        const port = redis!.port;
        await redis!.stop();
        redis = await startPrivateRedis({ port });
      });
      await event('Postgres restarted', async () => {
        await pg!.restart();
      });
      loading = false;
      await Promise.all(clients);
      const end = Date.now() - t0;

      // What the clients saw.
      const served = outcomes.filter((o) => o.served).length;
      const summary = {
        requests: outcomes.length,
        served,
        share: served / outcomes.length,
        failures: countBy(
          outcomes.filter((o) => !o.served),
          (o) => `${o.status} ${o.code ?? o.bad ?? ''}`,
        ),
        events: events.map((e, i) => {
          const until = events[i + 1]?.at ?? end;
          // A failure counts where it was seen (its end): a request sent just before the next fault
          // and failed by it belongs to that fault, not to the one before.
          const when = (o: Outcome) => (o.served ? o.start : o.end);
          const window = outcomes.filter((o) => when(o) >= e.at && when(o) < until);
          const lastFailure = Math.max(e.at, ...window.filter((o) => !o.served).map((o) => o.start));
          return {
            ...e,
            requests: window.length,
            failed: window.filter((o) => !o.served).length,
            recoveredAfterMs: lastFailure - e.at,
            servedAfterRecovery: window.filter((o) => o.start > lastFailure && o.served).length,
          };
        }),
      };
      console.log(JSON.stringify(summary, null, 2));
      expect(outcomes.filter((o) => o.bad).map((o) => `${o.start} ms: ${o.bad}`)).toEqual([]);
      expect(summary.share).toBeGreaterThanOrEqual(0.95);
      for (const e of summary.events) {
        expect(e.recoveredAfterMs, e.name).toBeLessThanOrEqual(RECOVERY_MS);
        expect(e.servedAfterRecovery, e.name).toBeGreaterThan(0);
      }
      // The takeover opened the escrow from its stored participants, and said so.
      expect(start.output()).toMatch(/node_unreachable_stored_copy/);

      // The node is back: finalize and settle, and the money adds up to the ngonka.
      expect((await faults({ nodeQuery: null, chainQuery: null })).status).toBe(200);
      const chain = createChainClient({ chainRest, chainRpc, publicApi: nodeUrl, timeoutMs: 10_000 });
      const id = BigInt(escrow!.escrow_id);
      const row = (await queryEscrow(chain, id)).escrow!;
      const creatorBefore = await queryBalance(chain, row.creator, BASE_DENOM);
      const accepted = await admin('POST', `/v1/admin/devshards/${id}/settle`, {
        private_key_env: 'DEVSHARD_PRIVATE_KEY',
      });
      expect(accepted.status, accepted.text).toBe(202);
      await expect
        .poll(async () => (await admin('GET', `/v1/admin/devshards/${id}`)).json.state, {
          timeout: 90_000,
          interval: 500,
        })
        .toBe('settled')
        .catch(async (err: Error) => {
          const view = await admin('GET', `/v1/admin/devshards/${id}`);
          throw new Error(
            `${err.message}\n${view.text}\n${start!.output().split('\n').slice(-80).join('\n')}`,
          );
        });
      const view = (await admin('GET', `/v1/admin/devshards/${id}`)).json;
      const settled = await settledEvent(chain, view.settle_tx_hash);
      const doc = JSON.parse((await admin('POST', `/devshard/${id}/v1/finalize`)).text);
      const costs = doc.host_stats.reduce(
        (sum: bigint, x: { cost: string | number }) => sum + BigInt(x.cost),
        0n,
      );
      expect(costs).toBeGreaterThan(0n);
      expect(settled.totalPayout).toBe(costs + BigInt(doc.fees));
      expect(settled.totalPayout + settled.remainder).toBe(row.amount);
      const gas = await txFee(chain, view.settle_tx_hash);
      expect(await queryBalance(chain, row.creator, BASE_DENOM)).toBe(
        creatorBefore + settled.remainder - gas,
      );
    },
    LONG ? 900_000 : 300_000,
  );
});
