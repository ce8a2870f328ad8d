// Escrows whose creator key came in a request body (spec §5.1.6): the controller stores it sealed with
// GATEWAY_ENCRYPTION_KEY in escrows.signer_key_encrypted, and a replica given that key claims the
// escrow and signs with it. With a wrong or no key the escrow stays unclaimed and the failure is
// logged naming the escrow, with no key material in the line. Real Postgres and Redis (own prefix);
// sessions on the in-memory store (no requests are served here).
import { Writable } from 'node:stream';
import { PrivateKey } from '@gonka-gateway/chain';
import { HttpHostTransport, InMemorySessionStore, systemClock } from '@gonka-gateway/devshard/session';
import { createLogger, redisKeys, sealSecret } from '@gonka-gateway/shared';
import {
  createTestDatabase,
  createTestRedis,
  type TestDatabase,
  type TestRedis,
} from '@gonka-gateway/shared/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OwnershipRuntime } from '../ownership-runtime.js';
import { insertEscrowRows } from '../testing/escrow-rows.js';
import { twoSlotSessionRecord } from '../testing/session-record.js';
import { creatorKeyFromEnv } from './creator-key.js';

const TTL = 3_000;
const ENCRYPTION_KEY = Buffer.from('5e'.repeat(32), 'hex');
const OTHER_KEY = Buffer.from('7f'.repeat(32), 'hex');
const creator = PrivateKey.fromHex('a7'.repeat(32));
// The gateway default key is another account: signing with it would fail as WrongSigner, so a
// session that opens proves the decrypted key was used.
const defaultKey = PrivateKey.fromHex('3c'.repeat(32));
const host = PrivateKey.fromHex('01'.padStart(64, '0'));
const ESCROW = 41n;
const SECRETS = [
  Buffer.from(creator.exportBytes()).toString('hex'),
  ENCRYPTION_KEY.toString('hex'),
  OTHER_KEY.toString('hex'),
];

let db: TestDatabase;
let redis: TestRedis;

const record = (escrowId: bigint) => twoSlotSessionRecord(escrowId, creator, host);

beforeAll(async () => {
  [db, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
  await insertEscrowRows(db.sql, [
    {
      escrowId: ESCROW,
      modelId: 'm1',
      creator: creator.address,
      signerKeyEncrypted: sealSecret(ENCRYPTION_KEY, creator.exportBytes()),
    },
  ]);
});

afterAll(async () => {
  await Promise.all([db.drop(), redis.cleanup()]);
});

/** One replica on its own key prefix (replicas never see each other), its log lines captured raw. */
async function startReplica(name: string, encryptionKey: Buffer | undefined) {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const signers: string[] = [];
  const store = new InMemorySessionStore();
  await store.create(record(ESCROW));
  const runtime = new OwnershipRuntime({
    sql: db.sql,
    redis: redis.redis,
    keys: redisKeys(`${redis.prefix}${name}:`),
    replicaId: name,
    url: `http://${name}`,
    leaseTtlMs: TTL,
    claimEveryMs: 100,
    store,
    signerFor: creatorKeyFromEnv(
      { DEVSHARD_PRIVATE_KEY: Buffer.from(defaultKey.exportBytes()).toString('hex') },
      { encryptionKey },
    ),
    transportFor: (signer) => {
      signers.push(signer.address);
      return new HttpHostTransport({ signer, nowSeconds: systemClock.nowSeconds });
    },
    resolveHost: () => undefined,
    // No `secrets` scrubbing: the test must see a leak if there is one.
    log: createLogger({ level: 'info', name, destination }),
  });
  await runtime.start();
  const serving = () =>
    runtime.sessions
      .list()
      .filter((e) => e.state === 'serving')
      .map((e) => e.escrowId);
  const failures = () => lines.filter((l) => l.includes('claiming the escrow failed'));
  return { runtime, lines, signers, serving, failures };
}

describe('escrows with an encrypted creator key', () => {
  it('are claimed with the configured GATEWAY_ENCRYPTION_KEY and the session signs as the creator', async () => {
    const r = await startReplica('enc-right', ENCRYPTION_KEY);
    try {
      await expect.poll(r.serving, { timeout: 10_000 }).toEqual([ESCROW]);
      expect(r.signers).toEqual([creator.address]);
      expect(r.failures()).toEqual([]);
    } finally {
      await r.runtime.close();
    }
  }, 30_000);

  for (const [name, key, reason] of [
    ['enc-wrong', OTHER_KEY, /cannot be opened: .*wrong key or tampered/],
    ['enc-none', undefined, /GATEWAY_ENCRYPTION_KEY is not set/],
  ] as const) {
    it(`stay unclaimed with ${key ? 'a wrong' : 'no'} key, logged naming the escrow and no secret`, async () => {
      const r = await startReplica(name, key);
      try {
        // Several claim passes, each failing on the same escrow.
        await expect.poll(() => r.failures().length, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
        expect(r.serving()).toEqual([]);
        // A claim pass may be opening it again at this moment; none ever gets past opening.
        expect(r.runtime.sessions.list().filter((e) => e.state !== 'opening')).toEqual([]);
        expect(r.signers).toEqual([]);
        const line = JSON.parse(r.failures()[0] ?? '{}') as { escrowId?: string; err?: { message?: string } };
        expect(line.escrowId).toBe(ESCROW.toString());
        expect(line.err?.message).toContain(`escrow ${ESCROW}`);
        expect(line.err?.message).toMatch(reason);
      } finally {
        await r.runtime.close();
      }
      const all = r.lines.join('\n').toLowerCase();
      for (const secret of SECRETS) expect(all).not.toContain(secret);
    }, 30_000);
  }
});
