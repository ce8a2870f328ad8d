// The registry of owned sessions in one process, against the devnet hosts, Postgres and Redis: what
// it publishes into the pool state, how a lost lease takes an escrow out of routing at once, and how
// a faulted session (here: a host root we cannot match, a divergence) is reported with its cause and
// never claimed again by anyone.
import { QWEN_MODEL } from '@gonka-gateway/devnet';
import {
  type ChatEvent,
  type ChatStream,
  devshardBaseUrl,
  type HostTransport,
  HttpHostTransport,
  type SessionEvent,
} from '@gonka-gateway/devshard/session';
import {
  ClaimLoop,
  NotOwnedError,
  OwnedSessions,
  PostgresSessionStore,
  parseLeaseValue,
  ReplicaDirectory,
  readActiveEscrows,
} from '@gonka-gateway/escrow-runtime';
import { insertEscrowRows, startPrivateRedis } from '@gonka-gateway/escrow-runtime/testing';
import { closeRedis, decodePoolState, openRedis, redisKeys } from '@gonka-gateway/shared';
import {
  createTestDatabase,
  createTestRedis,
  type TestDatabase,
  type TestRedis,
} from '@gonka-gateway/shared/testing';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway, type TestEscrow } from '../devshard-devnet/harness.js';

let gateway: Gateway;
let db: TestDatabase;
let t: TestRedis;
let storeSql: postgres.Sql;
let escrows: TestEscrow[];
let keys: ReturnType<typeof redisKeys>;
/** Escrows whose hosts' roots this process pretends not to match (every receipt's state hash altered). */
const diverging = new Set<string>();

/** HttpHostTransport, except that receipts of `diverging` escrows carry a state hash we cannot match. */
function divergingTransport(inner: HostTransport): HostTransport {
  return {
    getSignatures: (...a) => inner.getSignatures(...a),
    getDiffs: (...a) => inner.getDiffs(...a),
    getMempool: (...a) => inner.getMempool(...a),
    verifyTimeout: (...a) => inner.verifyTimeout(...a),
    async chat(target, escrowId, request, options): Promise<ChatStream> {
      const stream = await inner.chat(target, escrowId, request, options);
      if (!diverging.has(escrowId)) return stream;
      return {
        cancel: () => stream.cancel(),
        async *[Symbol.asyncIterator](): AsyncGenerator<ChatEvent, void, undefined> {
          for await (const event of stream) {
            if (event.type === 'receipt' && event.receipt.stateHash) {
              yield { type: 'receipt', receipt: { ...event.receipt, stateHash: new Uint8Array(32).fill(7) } };
            } else yield event;
          }
        },
      };
    },
  };
}

function registry(replicaId: string, events: [bigint, SessionEvent][] = [], redis = t.redis): OwnedSessions {
  const signer = gateway.creator.key;
  return new OwnedSessions({
    sql: db.sql,
    redis,
    keys,
    replicaId,
    leaseTtlMs: 1_500,
    store: new PostgresSessionStore(storeSql),
    signerFor: () => signer,
    resolveHost: (address, version) => {
      const url = gateway.hostUrls.get(address);
      return url === undefined ? undefined : { address, baseUrl: devshardBaseUrl(url, version) };
    },
    transportFor: (key) => divergingTransport(new HttpHostTransport({ signer: key })),
    session: { maxNonce: gateway.params.devshardEscrow.maxNonce },
    onSessionEvent: (id, event) => events.push([id, event]),
  });
}

const body = (tag: string) =>
  new TextEncoder().encode(
    JSON.stringify({
      model: QWEN_MODEL,
      messages: [{ role: 'user', content: tag }],
      max_tokens: 64,
      stream: true,
    }),
  );
const input = (tag: string) => ({
  body: body(tag),
  model: QWEN_MODEL,
  inputLength: BigInt(body(tag).length),
  maxTokens: 64n,
});

async function escrowRow(escrowId: bigint) {
  const [row] = await db.sql<{ active: boolean; last_error: string | null }[]>`
    select active, last_error from escrows where escrow_id = ${escrowId.toString()}`;
  return row;
}

async function expectNotClaimedAfterFlushall(escrowId: bigint): Promise<void> {
  const server = await startPrivateRedis();
  const redis = openRedis(server.url);
  const claimer = registry('r4', [], redis);
  const directory = new ReplicaDirectory({ redis, keys, replicaId: 'r4', url: 'http://r4', ttlMs: 1_500 });
  try {
    await redis.flushall();
    await directory.register();
    const loop = new ClaimLoop({ sql: db.sql, redis, keys, directory, target: claimer, overdueAfterMs: 0 });
    const pass = await loop.pass();
    expect(pass.claimed).not.toContain(escrowId);
    expect(claimer.owned().has(escrowId)).toBe(false);
  } finally {
    await claimer.close();
    await closeRedis(redis);
    await server.stop();
  }
}

async function pool(escrowId: bigint) {
  return decodePoolState(await t.redis.hgetall(keys.poolEscrow(escrowId)));
}

beforeAll(async () => {
  [gateway, db, t] = await Promise.all([Gateway.start(), createTestDatabase(), createTestRedis()]);
  keys = redisKeys(t.prefix);
  storeSql = postgres(db.url, { max: 8, onnotice: () => {} });
  const store = new PostgresSessionStore(storeSql);
  escrows = [];
  for (let i = 0; i < 2; i++) {
    const escrow = await gateway.escrow(() => true, 'any group');
    await store.create(escrow.record);
    await insertEscrowRows(db.sql, [{ escrowId: escrow.id, modelId: QWEN_MODEL }]);
    escrows.push(escrow);
  }
}, 60_000);

afterAll(async () => {
  await storeSql?.end({ timeout: 5 });
  await Promise.allSettled([t?.cleanup(), db?.drop(), gateway?.close()]);
});

describe('OwnedSessions', () => {
  it('publishes ownership and progress, and takes an escrow out of routing the moment its lease is lost', async () => {
    const owned = registry('r1');
    try {
      const [active] = await readActiveEscrows(db.sql);
      expect(await owned.claim(active!)).toBe(true);
      const id = active!.escrowId;
      const first = owned.list()[0]!;
      expect(parseLeaseValue((await t.redis.get(keys.escrowLease(id)))!)).toEqual({
        replicaId: 'r1',
        token: first.fencingToken,
      });
      expect(await pool(id)).toMatchObject({
        owner: 'r1',
        status: 'active',
        modelId: QWEN_MODEL,
        nonce: 0n,
        reserved: 0n,
      });
      expect(owned.pick(QWEN_MODEL)).toBe(id);

      const result = await owned.infer(id, input('progress'));
      expect(result).toMatchObject({ status: 'completed', finished: true });
      await expect.poll(async () => (await pool(id))?.nonce).toBe(result.nonce);
      // In-flight reservations are published with the progress (the balance check's holds).
      expect(typeof (await pool(id))?.reserved).toBe('bigint');

      // Redis loses the lease (FLUSHALL, failover): out of routing before any renewal could say so.
      await t.redis.del(keys.escrowLease(id));
      await expect.poll(() => owned.owned().has(id), { timeout: 5_000 }).toBe(false);
      await expect(owned.infer(id, input('after-loss'))).rejects.toThrow(NotOwnedError);
      // Claimed again: a new Postgres token, greater than the last.
      expect(await owned.claim(active!)).toBe(true);
      expect(BigInt(owned.list()[0]!.fencingToken!)).toBeGreaterThan(BigInt(first.fencingToken!));
    } finally {
      await owned.close();
    }
    // A clean close drains and lets go: no lease, no owner in the pool state.
    const id = escrows[0]!.id;
    expect(await t.redis.get(keys.escrowLease(id))).toBeNull();
    expect((await pool(id))?.owner).toBeNull();
  });

  it('a faulted session is reported with its cause, released, and claimed by nobody afterwards', async () => {
    const events: [bigint, SessionEvent][] = [];
    const owned = registry('r2', events);
    const other = registry('r3');
    const escrow = escrows[1]!;
    const id = escrow.id;
    try {
      const active = (await readActiveEscrows(db.sql)).find((e) => e.escrowId === id)!;
      expect(await owned.claim(active)).toBe(true);
      diverging.add(id.toString());
      const result = await owned.infer(id, input('diverge'));
      expect(result.nonce).toBe(1n);
      await expect.poll(() => events.some(([e, ev]) => e === id && ev.type === 'faulted')).toBe(true);
      await expect.poll(async () => (await pool(id))?.status, { timeout: 5_000 }).toBe('faulted');
      const state = (await pool(id))!;
      expect(state.cause).toMatch(/diverged/);
      await expect.poll(() => t.redis.get(keys.escrowLease(id)), { timeout: 5_000 }).toBeNull();
      expect((await pool(id))?.owner).toBeNull();
      expect(owned.owned().has(id)).toBe(false);

      // Another replica's claim pass leaves the faulted escrow alone (an operator must look first).
      const directory = new ReplicaDirectory({
        redis: t.redis,
        keys,
        replicaId: 'r3',
        url: 'http://r3',
        ttlMs: 1_500,
      });
      await directory.register();
      const loop = new ClaimLoop({
        sql: db.sql,
        redis: t.redis,
        keys,
        directory,
        target: other,
        overdueAfterMs: 0,
      });
      const pass = await loop.pass();
      expect(pass.claimed).not.toContain(id);
      expect(other.owned().has(id)).toBe(false);
      await directory.stop();

      // The fault is in Postgres too: after Redis lost everything (FLUSHALL, here on a private
      // redis-server) and with it the `faulted` status, a claim pass still leaves the escrow alone.
      expect(await escrowRow(id)).toMatchObject({
        active: false,
        last_error: expect.stringMatching(/diverged/),
      });
      await expectNotClaimedAfterFlushall(id);
    } finally {
      diverging.delete(id.toString());
      await owned.close();
      await other.close();
    }
  });
});
