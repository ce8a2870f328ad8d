// What an owner publishes about an escrow's nonce ceiling (devshard-protocol.md §7.5; shared
// nonce-routing.ts), against the devnet, Postgres and Redis: the record's max_nonce and its routing
// stop at claim; for a record stored without one, the chain's answer (ChainMaxNonce) read in the
// background, and until an answer the stop of an unknown ceiling (19,800) with no ceiling published.
import { QWEN_MODEL } from '@gonka-gateway/devnet';
import { devshardBaseUrl, HttpHostTransport } from '@gonka-gateway/devshard/session';
import {
  ChainMaxNonce,
  OwnedSessions,
  PostgresSessionStore,
  readActiveEscrows,
} from '@gonka-gateway/escrow-runtime';
import { insertEscrowRows } from '@gonka-gateway/escrow-runtime/testing';
import { decodePoolState, redisKeys } from '@gonka-gateway/shared';
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
let keys: ReturnType<typeof redisKeys>;
/** An escrow registered with max_nonce in its record, and one stored as older records were. */
let known: TestEscrow;
let unknown: TestEscrow;

beforeAll(async () => {
  [gateway, db, t] = await Promise.all([Gateway.start(), createTestDatabase(), createTestRedis()]);
  keys = redisKeys(t.prefix);
  storeSql = postgres(db.url, { max: 4, onnotice: () => {} });
  const store = new PostgresSessionStore(storeSql);
  known = await gateway.escrow(() => true, 'any group');
  unknown = await gateway.escrow(() => true, 'any group');
  await store.create(known.record);
  const { maxNonce: _dropped, ...older } = unknown.record.chainParams;
  await store.create({ ...unknown.record, chainParams: older });
  await insertEscrowRows(db.sql, [
    { escrowId: known.id, modelId: QWEN_MODEL },
    { escrowId: unknown.id, modelId: QWEN_MODEL },
  ]);
}, 60_000);

afterAll(async () => {
  await storeSql?.end({ timeout: 5 });
  await Promise.allSettled([t?.cleanup(), db?.drop(), gateway?.close()]);
});

function registry(replicaId: string, maxNonceOf: (escrowId: bigint) => Promise<bigint>): OwnedSessions {
  return new OwnedSessions({
    redis: t.redis,
    keys,
    replicaId,
    leaseTtlMs: 1_500,
    store: new PostgresSessionStore(storeSql),
    signerFor: () => gateway.creator.key,
    resolveHost: (address, version) => {
      const url = gateway.hostUrls.get(address);
      return url === undefined ? undefined : { address, baseUrl: devshardBaseUrl(url, version) };
    },
    transportFor: (key) => new HttpHostTransport({ signer: key }),
    maxNonceOf,
  });
}

const pool = async (escrowId: bigint) => decodePoolState(await t.redis.hgetall(keys.poolEscrow(escrowId)));

describe('the nonce ceiling an owner publishes', () => {
  it("publishes the record's ceiling at claim, and an unknown one's stop until the chain answers", async () => {
    const chainMaxNonce = gateway.params.devshardEscrow.maxNonce;
    const stopOf = (e: TestEscrow) => chainMaxNonce - BigInt(e.row.slots.length + 1) - 200n;
    const asked: bigint[] = [];
    const chainDown = registry('r1', async (id) => {
      asked.push(id);
      throw new Error('chain unreachable');
    });
    const escrows = await readActiveEscrows(db.sql);
    const byId = (id: bigint) => escrows.find((e) => e.escrowId === id)!;
    try {
      expect(await chainDown.claim(byId(known.id))).toBe(true);
      expect(await pool(known.id)).toMatchObject({ nonceCeiling: chainMaxNonce, routingStop: stopOf(known) });

      expect(await chainDown.claim(byId(unknown.id))).toBe(true);
      await expect.poll(() => asked).toEqual([unknown.id]);
      const entry = await pool(unknown.id);
      expect(entry?.nonceCeiling).toBeUndefined();
      expect(entry?.routingStop).toBe(19_800n);
      expect(chainDown.list().find((e) => e.escrowId === unknown.id)).toMatchObject({
        nonceCeiling: undefined,
        routingStop: 19_800n,
        canStart: true,
      });
      await chainDown.drain(unknown.id);
    } finally {
      await chainDown.close();
    }

    // The next owner reads the chain (the escrow row's frozen max_nonce) and publishes it.
    const reader = new ChainMaxNonce({ client: gateway.client });
    const chainUp = registry('r2', (id) => reader.of(id));
    try {
      expect(await chainUp.claim(byId(unknown.id))).toBe(true);
      await expect.poll(async () => (await pool(unknown.id))?.routingStop).toBe(stopOf(unknown));
      expect((await pool(unknown.id))?.nonceCeiling).toBe(chainMaxNonce);
      expect(chainUp.list()[0]).toMatchObject({ nonceCeiling: chainMaxNonce, routingStop: stopOf(unknown) });
    } finally {
      await chainUp.close();
    }
  });
});
