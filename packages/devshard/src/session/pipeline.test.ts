// Pipelined composition (pipeline.ts, write-ahead.ts; architecture §2.3, devshard-protocol.md §7.1):
// the next nonce is composed and signed while the previous write-ahead is in flight, the diffs that
// queued meanwhile go to the store in one appendDiffs, and nothing of a diff reaches a host before
// it and every diff before it are durable. A failed write voids every diff composed after it.
import { describe, expect, it, vi } from 'vitest';
import { ESCROW_ID, request, setup } from '../testing/session-setup.js';
import { contractDiff, contractRecord } from '../testing/store-contract.js';
import { wrapStore } from '../testing/wrap-store.js';
import { SessionErrorCode } from './errors.js';
import { InMemorySessionStore } from './memory-store.js';
import { SessionStoreError, SessionStoreErrorCode, type StoredDiff } from './store.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

type Outcome = 'land' | 'refuse' | 'landThenLose';

/** A store whose write-aheads wait until the test lets each one land, be refused or be lost. */
function heldStore(t: ReturnType<typeof setup>) {
  const writes: StoredDiff[][] = [];
  const held: ((outcome: Outcome) => void)[] = [];
  const state = { hold: true };
  const gate = async (diffs: readonly StoredDiff[], write: () => Promise<void>) => {
    writes.push([...diffs]);
    const outcome = state.hold
      ? await new Promise<Outcome>((resolve) => held.push(resolve))
      : ('land' as Outcome);
    if (outcome === 'refuse') throw new SessionStoreError(SessionStoreErrorCode.NotFound, 'refused (test)');
    await write();
    if (outcome === 'landThenLose') throw new Error('connection reset after COMMIT');
  };
  const memory = t.store as InMemorySessionStore;
  const store = wrapStore(t.store, {
    appendDiff: (id, d, token, w) => gate([d], () => memory.appendDiff(id, d, token, w)),
    appendDiffs: (id, ds, token, w) => gate(ds, () => memory.appendDiffs(id, ds, token, w)),
  });
  /** Settles the oldest held write once it is there. */
  const next = async (outcome: Outcome) => {
    await vi.waitFor(() => expect(held.length).toBeGreaterThan(0));
    held.shift()!(outcome);
  };
  const nonces = () => writes.map((w) => w.map((d) => d.nonce));
  const signaturesAt = (nonce: bigint) =>
    new Set(
      writes
        .flat()
        .filter((d) => d.nonce === nonce)
        .map((d) => hex(d.diff.userSig)),
    );
  return { store, state, held, next, nonces, signaturesAt };
}

const settle = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );

describe('pipelined composition (architecture §2.3)', () => {
  it('composes and signs the next nonces while a write-ahead is in flight, writes them together, sends nothing early', async () => {
    const t = setup();
    await t.init();
    const h = heldStore(t);
    const s = await t.open({ store: h.store });
    const baseline = t.net.calls.length;
    const first = s.infer(request());
    await vi.waitFor(() => expect(h.held.length).toBe(1)); // nonce 1's write is in flight
    const second = s.infer(request());
    const third = s.infer(request());
    // Both compose and sign on nonce 1's not-yet-durable state; none of it is written or sent yet.
    await vi.waitFor(() => expect(h.held.length).toBe(1));
    await new Promise((r) => setTimeout(r, 20));
    expect(h.nonces()).toEqual([[1n]]);
    expect(t.net.calls.length).toBe(baseline);

    await h.next('land'); // nonce 1 durable: 2 and 3 go in one write, held in turn
    await vi.waitFor(() => expect(h.nonces()).toEqual([[1n], [2n, 3n]]));
    expect((await first).nonce).toBe(1n);
    // Nonce 1 was sent; nothing of 2 or 3 reached any host while their write is in flight.
    expect(t.net.calls.slice(baseline).some((c) => c.diffNonces.includes(1n))).toBe(true);
    expect(t.net.calls.some((c) => c.diffNonces.some((n) => n >= 2n))).toBe(false);

    h.state.hold = false;
    await h.next('land');
    expect([(await second).nonce, (await third).nonce]).toEqual([2n, 3n]);
    expect((await t.store.load(ESCROW_ID))!.diffs.map((d) => d.nonce)).toEqual([1n, 2n, 3n]);
    expect(s.latestNonce).toBe(3n);
    for (const n of [1n, 2n, 3n]) expect(h.signaturesAt(n).size).toBe(1);
    // Per host, the diffs went out in nonce order and each host ends at the replica's state.
    for (const host of t.net.hosts.keys()) await s.catchUpHost(host);
    expect(t.net.allAt(s.state)).toBe(true);
    expect(t.net.conflicts).toEqual([]);
    expect(s.fault).toBeUndefined();
  });

  it('a refused write-ahead voids the diffs composed after it: none is written or sent, the session goes on', async () => {
    const t = setup();
    await t.init();
    const h = heldStore(t);
    const s = await t.open({ store: h.store });
    const baseline = t.net.calls.length;
    const first = settle(s.infer(request()));
    await vi.waitFor(() => expect(h.held.length).toBe(1));
    const later = [settle(s.infer(request())), settle(s.infer(request()))];
    await new Promise((r) => setTimeout(r, 20));
    await h.next('refuse');
    for (const r of [await first, ...(await Promise.all(later))]) {
      expect(r.ok).toBe(false);
      expect(r.ok ? undefined : r.error).toMatchObject({ code: SessionErrorCode.WriteFailed });
    }
    expect(h.nonces()).toEqual([[1n]]); // 2 and 3 never reached the store
    expect(t.net.calls.length).toBe(baseline); // nor any host
    expect((await t.store.load(ESCROW_ID))!.lastNonce).toBe(0n);
    expect(s.latestNonce).toBe(0n);
    expect(s.fault).toBeUndefined();

    h.state.hold = false;
    const r = await s.infer(request());
    expect(r).toMatchObject({ nonce: 1n, status: 'completed' });
    expect((await t.store.load(ESCROW_ID))!.diffs.map((d) => d.nonce)).toEqual([1n]);
    expect(t.net.conflicts).toEqual([]);
  });

  it('an unknown outcome is resolved by the identical write before anything later is written', async () => {
    const t = setup();
    await t.init();
    const h = heldStore(t);
    const s = await t.open({ store: h.store, appendAttempts: 1 });
    const first = settle(s.infer(request()));
    await vi.waitFor(() => expect(h.held.length).toBe(1));
    const voided = settle(s.infer(request()));
    await new Promise((r) => setTimeout(r, 20));
    await h.next('landThenLose'); // nonce 1 landed, its reply lost
    expect(await first).toMatchObject({ ok: false, error: { code: SessionErrorCode.WriteFailed } });
    expect(await voided).toMatchObject({ ok: false, error: { code: SessionErrorCode.WriteFailed } });
    expect(h.nonces()).toEqual([[1n]]);

    h.state.hold = false;
    const r = await s.infer(request());
    // The identical nonce-1 write again (a no-op), then nonce 2 composed after it.
    expect(h.nonces()).toEqual([[1n], [1n], [2n]]);
    expect(h.signaturesAt(1n).size).toBe(1);
    expect(r).toMatchObject({ nonce: 2n, status: 'completed' });
    expect(s.state.inferences.has(1n)).toBe(true);
    expect((await t.store.load(ESCROW_ID))!.diffs.map((d) => d.nonce)).toEqual([1n, 2n]);
    expect(t.net.conflicts).toEqual([]);
  });

  it('a flush composes on the replica only once the diffs in flight are durable', async () => {
    const t = setup();
    await t.init();
    const h = heldStore(t);
    const s = await t.open({ store: h.store });
    h.state.hold = false;
    await s.infer(request()); // nonce 1, its Confirm and Finish now queued
    h.state.hold = true;
    const second = s.infer(request());
    await vi.waitFor(() => expect(h.held.length).toBe(1));
    const flushed = s.flush();
    await new Promise((r) => setTimeout(r, 20));
    expect(h.nonces()).toEqual([[1n], [2n]]); // the flush waits for nonce 2, composing nothing
    h.state.hold = false;
    await h.next('land');
    expect((await second).nonce).toBe(2n);
    // Nonce 2 carried what was queued; whatever the flush found after it is nonce 3, never 2 again.
    const f = await flushed;
    if (f) expect(f.nonce).toBe(3n);
    expect(h.nonces().slice(0, 2)).toEqual([[1n], [2n]]);
    expect(h.signaturesAt(2n).size).toBe(1);
    expect(s.fault).toBeUndefined();
    expect(t.net.conflicts).toEqual([]);
  });

  it('keeps the per-escrow write count below the request count under concurrency', async () => {
    const t = setup();
    await t.init();
    let writes = 0;
    const memory = t.store as InMemorySessionStore;
    const slow = () => new Promise((r) => setTimeout(r, 5));
    const store = wrapStore(t.store, {
      appendDiff: async (id, d, token, w) => {
        writes++;
        await slow();
        return memory.appendDiff(id, d, token, w);
      },
      appendDiffs: async (id, ds, token, w) => {
        writes++;
        await slow();
        return memory.appendDiffs(id, ds, token, w);
      },
    });
    const s = await t.open({ store });
    const results = await Promise.all(Array.from({ length: 24 }, () => s.infer(request())));
    expect(results.map((r) => r.nonce).sort((a, b) => Number(a - b))).toEqual(
      Array.from({ length: 24 }, (_, i) => BigInt(i + 1)),
    );
    expect(writes).toBeLessThan(12);
    for (const host of t.net.hosts.keys()) await s.catchUpHost(host);
    expect(t.net.allAt(s.state)).toBe(true);
    expect(t.net.conflicts).toEqual([]);
  });
});

describe('InMemorySessionStore.appendDiffs', () => {
  it('appends consecutive diffs all or nothing, fenced, and repeats the identical call as a no-op', async () => {
    const store = new InMemorySessionStore();
    const id = '77';
    await store.create(contractRecord(id));
    const { fencingToken } = await store.acquire(id);
    await store.appendDiff(id, contractDiff(1n), fencingToken);
    await expect(
      store.appendDiffs(id, [contractDiff(2n), contractDiff(3n)], fencingToken + 1n),
    ).rejects.toMatchObject({ code: SessionStoreErrorCode.StaleToken });
    await expect(
      store.appendDiffs(id, [contractDiff(3n), contractDiff(4n)], fencingToken),
    ).rejects.toMatchObject({
      code: SessionStoreErrorCode.NonceConflict,
    });
    const writes = { addPending: [{ key: 'k', bytes: Uint8Array.of(1) }] };
    await store.appendDiffs(id, [contractDiff(2n), contractDiff(3n)], fencingToken, writes);
    expect((await store.load(id))!.lastNonce).toBe(3n);
    await store.appendDiffs(id, [contractDiff(2n), contractDiff(3n)], fencingToken, writes);
    // Overlapping the head with a new diff is a conflict, and writes nothing.
    await expect(
      store.appendDiffs(id, [contractDiff(3n), contractDiff(4n)], fencingToken),
    ).rejects.toMatchObject({
      code: SessionStoreErrorCode.NonceConflict,
    });
    const loaded = (await store.load(id))!;
    expect(loaded.diffs.map((d) => d.nonce)).toEqual([1n, 2n, 3n]);
    expect(loaded.pendingTxs.map((p) => p.key)).toEqual(['k']);
  });
});
