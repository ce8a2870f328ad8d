// Escrow ownership across processes (architecture §2): owner node processes (escrow-runtime's
// ownership runtime) share escrows on the devnet through real Postgres and a private redis-server.
// An owner killed mid-stream, paused past its lease, a Redis that loses everything, and a drain
// with live streams must never produce a second signature for a nonce nor lose a Confirm/Finish,
// and every escrow settles to the ngonka.

import { QWEN_MODEL } from '@gonka-gateway/devnet';
import { dedupKeys, diffToWire } from '@gonka-gateway/devshard';
import { devshardBaseUrl, HttpHostTransport, UserSession } from '@gonka-gateway/devshard/session';
import { EscrowLease, parseLeaseValue } from '@gonka-gateway/escrow-runtime';
import { readSentDiffs, setEscrowState } from '@gonka-gateway/escrow-runtime/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestEscrow } from '../devshard-devnet/harness.js';
import { ledgerOf } from '../devshard-devnet/ledger.js';
import { ledgerFromStore, settleAndCheck } from '../devshard-devnet/settle.js';
import {
  chatBody,
  LEASE_TTL_MS,
  OwnerCluster,
  type StreamedInference,
  streamInference,
} from './owner-cluster.js';

const ESCROWS = 4;
/** The takeover bound: every escrow is owned again within TTL + 5 s. */
const REOWN_WITHIN_MS = LEASE_TTL_MS + 5_000;
let cluster: OwnerCluster;
/** Inference nonces whose owner was killed mid-stream (escrow id → nonce). */
const killedMidStream = new Map<string, bigint>();

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

beforeAll(async () => {
  cluster = await OwnerCluster.start(ESCROWS);
  await Promise.all([cluster.startOwner('a'), cluster.startOwner('b')]);
}, 60_000);

afterAll(async () => {
  await cluster?.close();
});

/** Which replica holds each escrow's lease in Redis (undefined: unleased). */
async function leaseHolders(): Promise<(string | undefined)[]> {
  const values = await cluster.redis.mget(...cluster.escrows.map((e) => cluster.keys.escrowLease(e.id)));
  return values.map((v) => (v ? parseLeaseValue(v)?.replicaId : undefined));
}

/** Every nonce sent to any host was sent with one signature only, and it is the stored row. */
async function expectNoNonceSignedTwice(): Promise<number> {
  const sent = readSentDiffs(cluster.sentDiffLog);
  const byNonce = new Map<string, Set<string>>();
  for (const s of sent) {
    const key = `${s.escrowId}/${s.nonce}`;
    byNonce.set(key, (byNonce.get(key) ?? new Set()).add(`${s.txs}/${s.userSig}`));
  }
  for (const [key, variants] of byNonce)
    expect({ key, variants: variants.size }).toEqual({ key, variants: 1 });
  for (const escrow of cluster.escrows) {
    const stored = new Map(
      (await cluster.storedDiffs(escrow.id)).map((d) => {
        const wire = diffToWire(d.diff);
        return [d.nonce.toString(), `${hex(wire.txs)}/${hex(wire.userSig)}`];
      }),
    );
    for (const [key, variants] of byNonce) {
      const [id, nonce] = key.split('/');
      if (id !== escrow.id.toString()) continue;
      expect({ key, sent: [...variants][0] }).toEqual({ key, sent: stored.get(nonce!) });
    }
    // And what every host applied is the stored row too.
    for (const address of escrow.hosts) {
      const replica = cluster.gateway.devnet.devshardHosts.session(address, escrow.id);
      if (!replica) continue;
      for (let n = 1n; n <= replica.latestNonce; n++) {
        const applied = replica.applied(n);
        if (!applied) continue;
        expect({ n, applied: `${hex(applied.wire.txs)}/${hex(applied.wire.userSig)}` }).toEqual({
          n,
          applied: stored.get(n.toString()),
        });
      }
    }
  }
  return sent.length;
}

describe('ownership across processes', () => {
  it('re-owns the escrows of an owner killed with SIGKILL mid-stream, and they serve again', async () => {
    await expect.poll(() => cluster.balanced(['a', 'b']), { timeout: 20_000, interval: 200 }).toBe(true);
    const map = await cluster.ownership();
    const victim = cluster.escrows.find((e) => map.get(e.id.toString())?.[0] === 'a');
    expect(victim, 'owner a holds an escrow').toBeDefined();

    cluster.gateway.devnet.model.setLatency({ perTokenMs: 40 });
    let sawChunk!: () => void;
    const chunkSeen = new Promise<void>((r) => {
      sawChunk = r;
    });
    const streaming = streamInference(
      cluster.owners.get('a')!.url,
      `escrow=${victim!.id}`,
      chatBody('kill-9'),
      (k) => {
        if (k === 'chunk') sawChunk();
      },
    );
    await chunkSeen;
    cluster.kill('a', 'SIGKILL');
    const killedAt = performance.now();
    cluster.owners.delete('a');
    // A replacement replica starts meanwhile (its start-up overlaps the takeover).
    const startingC = cluster.startOwner('c');
    const cut = await streaming;
    expect(cut.result).toBeUndefined();
    expect(cut.receipt, 'the killed stream had its receipt').toBeDefined();
    if (cut.receipt) killedMidStream.set(victim!.id.toString(), BigInt(cut.receipt.nonce));
    cluster.gateway.devnet.model.setLatency({ perTokenMs: 0 });

    await expect
      .poll(() => cluster.allOwned(['b', 'c']), { timeout: REOWN_WITHIN_MS, interval: 100 })
      .toBe(true);
    const reownedMs = Math.round(performance.now() - killedAt);
    expect((await leaseHolders()).every((h) => h === 'b' || h === 'c')).toBe(true);
    // The replacement takes its share once it is up (escrows spread, fair-share.ts): an escrow may be
    // between owners for a moment, so each is served once ownership has settled.
    await startingC;
    await expect.poll(() => cluster.balanced(['b', 'c']), { timeout: 20_000, interval: 200 }).toBe(true);
    const map2 = await cluster.ownership();
    for (const escrow of cluster.escrows) {
      const owner = cluster.owners.get(map2.get(escrow.id.toString())![0]!)!;
      const served = await streamInference(owner.url, `escrow=${escrow.id}`, chatBody(`after-${escrow.id}`));
      expect(served.result).toMatchObject({ status: 'completed', confirmed: true, finished: true });
    }
    await expectNoNonceSignedTwice();
    console.log(
      `SIGKILL: every escrow owned again ${reownedMs} ms after the kill (lease TTL ${LEASE_TTL_MS} ms)`,
    );
  });

  it('an owner paused with SIGSTOP past its TTL appends nothing after SIGCONT, even with nobody taking over', async () => {
    const owner = cluster.owners.get('c')!;
    const target = await servingEscrowOf('c');
    const token = BigInt(target.fencingToken!);
    // Both owners stop: nobody can take the escrow over, so its Postgres token stays c's and only
    // c's own lease deadline (the session's writeGuard) can keep it from writing.
    cluster.kill('b', 'SIGSTOP');
    cluster.kill('c', 'SIGSTOP');
    try {
      // A request reaches the stopped process (the kernel queues it); it runs only after SIGCONT.
      const queued = streamInference(owner.url, `escrow=${target.escrowId}`, chatBody('paused-alone'));
      await new Promise((r) => setTimeout(r, LEASE_TTL_MS + 500)); // the scenario: paused past the TTL
      expect((await cluster.store.load(target.escrowId))?.fencingToken).toBe(token);
      const at = await dbNow();
      cluster.kill('c', 'SIGCONT');
      const answer = await queued;
      expect(answer.result?.status).not.toBe('completed');
      expect(await diffsWrittenSince(target.escrowId, token, at)).toBe(0);
    } finally {
      cluster.kill('c', 'SIGCONT');
      cluster.kill('b', 'SIGCONT');
    }
    await expect.poll(() => cluster.balanced(['b', 'c']), { timeout: 20_000, interval: 200 }).toBe(true);
  });

  it('an owner paused with SIGSTOP past its TTL is taken over and appends nothing after SIGCONT', async () => {
    const owner = cluster.owners.get('c')!;
    const target = await servingEscrowOf('c');
    const token = BigInt(target.fencingToken!);
    cluster.kill('c', 'SIGSTOP');
    let answer: StreamedInference;
    let at: Date;
    let sentBefore: number;
    try {
      const queued = streamInference(owner.url, `escrow=${target.escrowId}`, chatBody('while-stopped'));
      // b takes the escrow over once c's lease expires (c cannot renew while stopped).
      await expect
        .poll(
          async () =>
            parseLeaseValue(
              (await cluster.redis.get(cluster.keys.escrowLease(BigInt(target.escrowId)))) ?? '',
            ),
          {
            timeout: REOWN_WITHIN_MS,
            interval: 100,
          },
        )
        .toMatchObject({ replicaId: 'b' });
      sentBefore = readSentDiffs(cluster.sentDiffLog).filter((s) => s.replicaId === 'c').length;
      at = await dbNow();
      cluster.kill('c', 'SIGCONT');
      answer = await queued;
    } finally {
      cluster.kill('c', 'SIGCONT');
    }
    expect(answer.result?.status).not.toBe('completed');
    // c stops serving the escrow under its old token and never wrote with that token again.
    await expect
      .poll(
        async () =>
          (await cluster.owned(owner)).some(
            (e) => e.escrowId === target.escrowId && e.fencingToken === target.fencingToken,
          ),
        { timeout: 10_000, interval: 100 },
      )
      .toBe(false);
    expect(await diffsWrittenSince(target.escrowId, token, at)).toBe(0);
    expect(readSentDiffs(cluster.sentDiffLog).filter((s) => s.replicaId === 'c').length).toBe(sentBefore);
    await expectNoNonceSignedTwice();
  });

  it('FLUSHALL under load: every escrow is owned again within TTL + 5 s and no nonce is served twice', async () => {
    await expect.poll(() => cluster.balanced(['b', 'c']), { timeout: 20_000, interval: 200 }).toBe(true);
    let stop = false;
    let completed = 0;
    const worker = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const names = ['b', 'c'];
        const owner = cluster.owners.get(names[(w + i) % 2]!)!;
        const r = await streamInference(
          owner.url,
          `model=${encodeURIComponent(QWEN_MODEL)}`,
          chatBody(`load-${w}-${i}`),
        );
        if (r.result?.status === 'completed') completed++;
        else await new Promise((res) => setTimeout(res, 50));
      }
    };
    const workers = [0, 1, 2, 3].map(worker);
    await expect.poll(() => completed, { timeout: 10_000 }).toBeGreaterThan(8);

    await cluster.redis.flushall();
    const flushedAt = performance.now();
    await expect
      .poll(
        async () =>
          (await leaseHolders()).every((h) => h === 'b' || h === 'c') && cluster.allOwned(['b', 'c']),
        {
          timeout: REOWN_WITHIN_MS,
          interval: 100,
        },
      )
      .toBe(true);
    const reownedMs = Math.round(performance.now() - flushedAt);
    const before = completed;
    await expect.poll(() => completed, { timeout: 10_000 }).toBeGreaterThan(before + 8);
    stop = true;
    await Promise.all(workers);
    const sent = await expectNoNonceSignedTwice();
    console.log(
      `FLUSHALL: every escrow re-owned after ${reownedMs} ms; ${completed} inferences, ${sent} diff sends`,
    );
  });

  it('a drain with 3 live streams loses no Confirm or Finish; the controller finalizes and settles to the ngonka', async () => {
    await expect.poll(() => cluster.balanced(['b', 'c']), { timeout: 20_000, interval: 200 }).toBe(true);
    const map = await cluster.ownership();
    const escrow = cluster.escrows[0]!;
    const owner = cluster.owners.get(map.get(escrow.id.toString())![0]!)!;

    cluster.gateway.devnet.model.setLatency({ perTokenMs: 30 });
    let receipts = 0;
    const streams = [0, 1, 2].map((i) =>
      streamInference(owner.url, `escrow=${escrow.id}`, chatBody(`drain-${i}`), (k) => {
        if (k === 'receipt') receipts++;
      }),
    );
    await expect.poll(() => receipts, { timeout: 10_000, interval: 20 }).toBe(3);
    // The controller's finalize (architecture §2.6): mark draining, ask the owner to hand over, and
    // take the escrow the moment the lease is free.
    await setEscrowState(cluster.db.sql, escrow.id, 'draining');
    const drained = fetch(`${owner.url}/drain?escrow=${escrow.id}`, { method: 'POST' });
    await expect
      .poll(() => cluster.redis.get(cluster.keys.escrowLease(escrow.id)), { timeout: 15_000, interval: 10 })
      .toBeNull();
    // What the owner left in Postgres when it let go: every Confirm and Finish of the 3 streams,
    // folded into a diff or stored as a pending tx (nothing only in its memory).
    const handedOver = (await cluster.store.load(escrow.id.toString()))!;
    const { session, lease } = await takeAsController(escrow);
    const results = await Promise.all(streams);
    cluster.gateway.devnet.model.setLatency({ perTokenMs: 0 });
    expect((await drained).status).toBe(200);
    try {
      const ledger = ledgerOf(escrow.row, handedOver.diffs);
      const pending = new Set(handedOver.pendingTxs.map((p) => p.key));
      for (const r of results) {
        expect(r.result).toMatchObject({ status: 'completed', confirmed: true, finished: true });
        const nonce = BigInt(r.result!.nonce);
        const fate = ledger.inferences.get(nonce)?.fate;
        expect({
          nonce,
          confirm: fate === 'started' || fate === 'finished' || pending.has(dedupKeys.confirm(nonce)),
          finish: fate === 'finished' || pending.has(dedupKeys.finish(nonce)),
        }).toEqual({ nonce, confirm: true, finish: true });
      }
      const fin = await session.finalize();
      await settleAndCheck(withPostgresStore(escrow), session, fin);
      await expectKilledInferenceBilledAtCost(escrow);
    } finally {
      await session.close();
      await lease.release();
    }
    // The owners kept running through the finalize and never took the escrow back: nobody acquired
    // the session after the controller, and with its lease released it stays unowned (no longer
    // `active` in Postgres), also after a few more claim passes.
    expect((await cluster.store.load(escrow.id.toString()))!.fencingToken).toBe(session.fencingToken);
    await new Promise((r) => setTimeout(r, LEASE_TTL_MS));
    expect(await cluster.redis.get(cluster.keys.escrowLease(escrow.id))).toBeNull();
    for (const running of cluster.owners.values()) {
      expect((await cluster.owned(running)).map((e) => String(e.escrowId))).not.toContain(
        escrow.id.toString(),
      );
    }
  });

  it('after every owner is stopped, each escrow (also the killed owner’s) finalizes and settles to the ngonka', async () => {
    await Promise.all([...cluster.owners.keys()].map((name) => cluster.stopOwner(name)));
    for (const escrow of cluster.escrows.slice(1)) {
      await setEscrowState(cluster.db.sql, escrow.id, 'draining');
      const { session, lease } = await takeAsController(escrow);
      try {
        const fin = await session.finalize();
        await settleAndCheck(withPostgresStore(escrow), session, fin);
        await expectKilledInferenceBilledAtCost(escrow);
      } finally {
        await session.close();
        await lease.release();
      }
    }
    await expectNoNonceSignedTwice();
    expect(killedChecked).toBe(killedMidStream.size);
  });
});

let killedChecked = 0;

/**
 * The inference whose owner was SIGKILLed mid-stream: its executor finished it and the new owner
 * took the Finish over (architecture §2.5 mempool read), so it is billed at its real cost, not held
 * or charged at its reservation.
 */
async function expectKilledInferenceBilledAtCost(escrow: TestEscrow): Promise<void> {
  const nonce = killedMidStream.get(escrow.id.toString());
  if (nonce === undefined) return;
  const ledger = await ledgerFromStore(withPostgresStore(escrow));
  const entry = ledger.inferences.get(nonce);
  expect(entry?.fate).toBe('finished');
  expect(entry!.cost).toBeLessThan(entry!.reserved);
  killedChecked++;
}

/** An escrow `name` serves (waiting until it holds a share: the claim loop rebalances after a join). */
async function servingEscrowOf(name: string) {
  const owner = cluster.owners.get(name)!;
  await expect
    .poll(async () => (await cluster.owned(owner)).filter((e) => e.state === 'serving').length, {
      timeout: 20_000,
      interval: 200,
    })
    .toBeGreaterThan(0);
  return (await cluster.owned(owner)).filter((e) => e.state === 'serving')[0]!;
}

async function dbNow(): Promise<Date> {
  return (await cluster.db.sql<{ at: Date }[]>`select clock_timestamp() as at`)[0]!.at;
}

/** Diffs stored under `token` since `at` (the writer's fencing token is kept on every row). */
async function diffsWrittenSince(escrowId: string, token: bigint, at: Date): Promise<number> {
  const rows = await cluster.db.sql<{ n: string }[]>`
    select count(*)::text as n from session_diffs
     where escrow_id = ${escrowId} and fencing_token = ${token.toString()} and created_at >= ${at}`;
  return Number(rows[0]!.n);
}

/** The controller's side of a hand-off: take the lease, then the session (token minted by Postgres). */
async function takeAsController(escrow: TestEscrow) {
  const lease = await EscrowLease.acquire({
    redis: cluster.redis,
    keys: cluster.keys,
    escrowId: escrow.id,
    replicaId: 'controller',
    ttlMs: 10_000,
  });
  if (!lease) throw new Error(`escrow ${escrow.id} is still leased`);
  const signer = cluster.gateway.creator.key;
  const session = await UserSession.open({
    store: cluster.store,
    escrowId: escrow.id,
    signer,
    transport: new HttpHostTransport({ signer }),
    resolveHost: (address, version) => {
      const url = cluster.gateway.hostUrls.get(address);
      return url === undefined ? undefined : { address, baseUrl: devshardBaseUrl(url, version) };
    },
    writeGuard: lease.guard,
    maxNonce: cluster.gateway.params.devshardEscrow.maxNonce,
  });
  await lease.setToken(session.fencingToken);
  return { session, lease };
}

/** The escrow with the Postgres store in place of its in-memory one (settle.ts reads `store`). */
function withPostgresStore(escrow: TestEscrow): TestEscrow {
  return Object.create(escrow, { store: { value: cluster.store } }) as TestEscrow;
}
