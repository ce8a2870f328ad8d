// An escrow whose runtime version the chain does not approve is left unclaimed before anything is
// leased or opened: the pool entry says `unsupported_version` with the cause, the marker is logged
// once per cause however many claim passes ask, and the escrow is claimed as soon as the version is
// approved again. Real Postgres and Redis; the session itself is never reached.
import { PrivateKey } from '@gonka-gateway/chain';
import { InMemorySessionStore } from '@gonka-gateway/devshard/session';
import { decodePoolState, encodePoolState, redisKeys } from '@gonka-gateway/shared';
import {
  createTestDatabase,
  createTestRedis,
  type TestDatabase,
  type TestRedis,
} from '@gonka-gateway/shared/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readActiveEscrows } from '../claim/active-escrows.js';
import { insertEscrowRows } from '../testing/escrow-rows.js';
import { OwnedSessions } from './owned-sessions.js';

const CAUSE =
  'the escrow is bound to devshard protocol v5, which the chain does not approve: the chain approves v6; this gateway speaks v5, v4, v3';

let db: TestDatabase;
let t: TestRedis;
beforeAll(async () => {
  [db, t] = await Promise.all([createTestDatabase(), createTestRedis()]);
  await insertEscrowRows(db.sql, [{ escrowId: 7n, modelId: 'm', version: 'v5' }]);
});
afterAll(() => Promise.all([db?.drop(), t?.cleanup()]));

describe('OwnedSessions and the protocol version', () => {
  it('declines an escrow whose version is refused, reports it once, and claims it once approved', async () => {
    const keys = redisKeys(t.prefix);
    // The entry a former owner (or the controller's pool rebuild) left.
    await t.redis.hset(
      keys.poolEscrow(7n),
      encodePoolState({
        escrowId: 7n,
        modelId: 'm',
        status: 'active',
        capacityWeight: 16,
        balanceEstimate: 5_000_000_000n,
        nonce: 12n,
        owner: null,
        updatedAtMs: 1,
      }),
    );
    let refusal: string | undefined = CAUSE;
    const logged: unknown[] = [];
    const prepared: bigint[] = [];
    const owned = new OwnedSessions({
      redis: t.redis,
      keys,
      replicaId: 'r1',
      leaseTtlMs: 1_500,
      store: new InMemorySessionStore(),
      signerFor: () => PrivateKey.fromHex('64'.padStart(64, '0')),
      resolveHost: () => undefined,
      versionRefusal: async (version) => (version === 'v5' ? refusal : undefined),
      prepare: async (escrow) => {
        prepared.push(escrow.escrowId);
        throw new Error('stop here: the session is not the subject');
      },
      log: { info: () => {}, warn: () => {}, error: (fields: unknown) => void logged.push(fields) },
    });
    try {
      const [escrow] = await readActiveEscrows(db.sql);
      expect(escrow).toMatchObject({ escrowId: 7n, version: 'v5' });
      for (let pass = 0; pass < 3; pass++) expect(await owned.claim(escrow!)).toBe(false);
      expect(prepared).toEqual([]);
      expect(await t.redis.get(keys.escrowLease(7n))).toBeNull();
      expect(decodePoolState(await t.redis.hgetall(keys.poolEscrow(7n)))).toMatchObject({
        status: 'unsupported_version',
        cause: CAUSE,
        owner: null,
        nonce: 12n,
      });
      expect(logged).toEqual([
        expect.objectContaining({ marker: 'escrow_version_unsupported', escrowId: '7', cause: CAUSE }),
      ]);

      refusal = undefined;
      expect(await owned.claim(escrow!)).toBe(false);
      expect(prepared).toEqual([7n]);
    } finally {
      await owned.close();
    }
  });
});
