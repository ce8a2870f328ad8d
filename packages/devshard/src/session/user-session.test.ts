import { describe, expect, it } from 'vitest';
import { newMsg, txOf } from '../proto/tx-builders.js';
import { signFinish } from '../signing/proposer.js';
import { InferenceStatus } from '../state/types.js';
import { advanceTo, ESCROW_ID, request, setup } from '../testing/session-setup.js';
import { wrapStore } from '../testing/wrap-store.js';
import { SessionErrorCode } from './errors.js';
import { SessionStoreError, SessionStoreErrorCode } from './store.js';

const dec = new TextDecoder();

describe('UserSession over in-process hosts (§7)', () => {
  it('serves many requests over 16 slots on 5 hosts; every replica ends at our root', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    const lines: string[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await s.infer(request(), {
        onChunk: (l) => lines.push(dec.decode(l)),
        onDone: (l) => lines.push(dec.decode(l)),
      });
      expect(r).toMatchObject({ nonce: BigInt(i + 1), status: 'completed', confirmed: true, finished: true });
      expect(r.executor).toBe(s.state.group.slots[(i + 1) % 16]);
    }
    // Sends run concurrently; composition still takes one nonce at a time.
    const results = await Promise.all(Array.from({ length: 12 }, () => s.infer(request())));
    expect(results.every((r) => r.status === 'completed' && r.finished)).toBe(true);
    expect(new Set(results.map((r) => r.nonce)).size).toBe(12);
    expect(lines.slice(0, 3)).toEqual([
      'data: {"choices":[{"delta":{"content":"n1"}}]}',
      'data: {"choices":[{"delta":{},"finish_reason":"stop"}]}',
      'data: [DONE]',
    ]);

    await s.flush(); // the last Confirm/Finish ride in a diff of their own
    expect(s.pendingTxCount).toBe(0);
    for (const address of t.net.hosts.keys()) expect(await s.catchUpHost(address)).toBe(true);
    expect(t.net.allAt(s.state)).toBe(true);
    expect(t.net.conflicts).toEqual([]);
    // Every inference confirmed and finished; the fee and costs add up.
    const records = [...s.state.inferences.values()];
    expect(records).toHaveLength(32);
    expect(records.every((r) => r.status === InferenceStatus.Finished)).toBe(true);
    const costs = s.state.hostStats.reduce((a, h) => a + h.cost, 0n);
    expect(s.balance).toBe(50_000_000n - 10_000n - 1_000n * s.latestNonce - costs);
    expect(costs).toBe(32n * (30n + 20n) * 10n);
  });

  it('persists every diff before a host sees it (write-ahead)', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    let checked = 0;
    t.net.onChat = async (_host, req) => {
      const stored = new Set((await t.store.load(ESCROW_ID))!.diffs.map((d) => d.nonce));
      for (const d of req.diffs) expect(stored.has(d.nonce)).toBe(true);
      checked += req.diffs.length;
    };
    for (let i = 0; i < 5; i++) await s.infer(request());
    await s.flush();
    expect(checked).toBeGreaterThanOrEqual(6);
  });

  it('sends nothing when the store refuses the write-ahead, and goes on with the next request', async () => {
    const t = setup();
    await t.init();
    let refuse = true;
    const refusing = wrapStore(t.store, {
      appendDiff: async (id, d, token, writes) => {
        if (refuse) throw new SessionStoreError(SessionStoreErrorCode.NotFound, 'refused');
        return t.store.appendDiff(id, d, token, writes);
      },
    });
    const s = await t.open({ store: refusing });
    await expect(s.infer(request())).rejects.toMatchObject({ code: SessionErrorCode.WriteFailed });
    expect(t.net.calls).toHaveLength(0);
    expect(s.latestNonce).toBe(0n);
    expect(s.fault).toBeUndefined();
    refuse = false;
    expect(await s.infer(request())).toMatchObject({ nonce: 1n, status: 'completed', finished: true });
  });

  it('fences the older owner at open: it can neither append nor save pending txs', async () => {
    const t = setup();
    await t.init();
    const a = await t.open();
    expect(a.fencingToken).toBe(1n);
    await a.infer(request());
    const b = await t.open(); // takeover: the store mints token 2 with the load
    expect(b.fencingToken).toBe(2n);
    expect((await b.infer(request())).nonce).toBe(2n);
    await expect(a.infer(request())).rejects.toMatchObject({ code: SessionErrorCode.OwnershipLost });
    expect(a.fault?.code).toBe(SessionErrorCode.OwnershipLost);
    expect((await t.store.load(ESCROW_ID))!.diffs.map((x) => x.nonce)).toEqual([1n, 2n]);
    expect(t.net.conflicts).toEqual([]);
  });

  it('takes the session in one step: an older owner writing right after the read is fenced, not missed', async () => {
    const t = setup();
    await t.init();
    const a = await t.open();
    await a.infer(request());
    // The old owner writes the moment the new owner's read returns (the old open read, then fenced).
    let raced: Promise<unknown> | undefined;
    const race = async <T>(read: Promise<T>): Promise<T> => {
      const result = await read;
      raced ??= a.infer(request()).catch((error: unknown) => error);
      await raced;
      return result;
    };
    const racing = wrapStore(t.store, {
      load: (id) => race(t.store.load(id)),
      acquire: (id) => race(t.store.acquire(id)),
    });
    const b = await t.open({ store: racing });
    expect(await raced).toMatchObject({ code: SessionErrorCode.OwnershipLost });
    expect(await b.infer(request())).toMatchObject({ nonce: 2n, status: 'completed' });
    expect(b.fault).toBeUndefined();
    expect(t.net.conflicts).toEqual([]);
  });

  it('prunes a stored payload once its inference leaves Pending (§7.4 needs it no more)', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    const refuser = t.net.hostOfSlot(2);
    refuser.behaviour.refuse = true;
    await advanceTo(s, refuser.slots);
    const refused = await s.infer(request()); // stays Pending: its payload is kept
    for (let i = 0; i < 3; i++) await s.infer(request());
    await s.flush();
    await s.drain(); // background writes done
    const stored = (await t.store.load(ESCROW_ID))!;
    expect([...stored.payloads.keys()]).toEqual([refused.nonce]);
  });

  it('reloads after a crash at the right nonce without re-signing one', async () => {
    const t = setup();
    await t.init();
    const s1 = await t.open();
    for (let i = 0; i < 7; i++) await s1.infer(request());
    // No close(): the process is gone; only the store remains.
    const s2 = await t.open();
    expect(s2.latestNonce).toBe(7n);
    expect(s2.state.root).toEqual(s1.state.root);
    expect(s2.balance).toBe(s1.balance);
    expect(s2.pendingTxCount).toBe(s1.pendingTxCount); // the last Confirm and Finish
    expect(s2.pendingTxCount).toBe(2);
    for (const h of t.net.hosts.keys()) expect(s2.hostSyncNonce(h)).toBe(s1.hostSyncNonce(h));
    const r = await s2.infer(request());
    expect(r).toMatchObject({ nonce: 8n, status: 'completed' });
    expect(s2.state.inferences.get(7n)?.status).toBe(InferenceStatus.Finished);
    for (const h of t.net.hosts.keys()) await s2.catchUpHost(h);
    expect(t.net.allAt(s2.state)).toBe(true);
    expect(t.net.conflicts).toEqual([]);
    expect(t.net.signedByNonce.size).toBe(8);
  });

  it('catches up a host that missed diffs, in chunks, then sends only the new diff', async () => {
    const t = setup();
    await t.init();
    const s = await t.open({ catchUpChunk: 3 });
    const lagging = t.net.hostOfSlot(1);
    lagging.behaviour.down = true;
    for (let i = 0; i < 14; i++) await s.infer(request()); // nonces 1, 6, 11 fail on the down host
    lagging.behaviour.down = false;
    await advanceTo(s, lagging.slots);
    const gap = s.latestNonce - s.hostSyncNonce(lagging.address);
    const before = t.net.calls.length;
    const r = await s.infer(request());
    expect(r.status).toBe('completed');
    const calls = t.net.calls.slice(before);
    const chunks = calls.filter((c) => c.purpose === 'catch-up');
    expect(chunks.length).toBe(Math.ceil(Number(gap) / 3));
    expect(chunks.every((c) => c.host === lagging.address && c.diffNonces.length <= 3 && !c.payload)).toBe(
      true,
    );
    expect(calls.at(-1)).toMatchObject({ payload: true, diffNonces: [r.nonce], nonce: r.nonce });
    expect(lagging.state.latestNonce).toBe(r.nonce);
    expect(lagging.state.root).toEqual(s.state.root);
  });

  it('skips ahead when a host shows it is further than we knew', async () => {
    const t = setup();
    await t.init();
    const s1 = await t.open();
    for (let i = 0; i < 10; i++) await s1.infer(request());
    const target = t.net.hostOfSlot(0);
    await s1.catchUpHost(target.address);
    // A store that lost host progress: the reopened session believes the host holds nothing.
    const forgetful = wrapStore(t.store, {
      acquire: async (id) => ({ ...(await t.store.acquire(id)), hostSync: new Map() }),
    });
    const s2 = await t.open({ store: forgetful, catchUpChunk: 3 });
    expect(s2.hostSyncNonce(target.address)).toBe(0n);
    const before = t.net.calls.length;
    expect(await s2.catchUpHost(target.address)).toBe(true);
    expect(t.net.calls.length - before).toBe(1); // one chunk, then the receipt showed nonce 10
    expect(s2.hostSyncNonce(target.address)).toBe(10n);
  });

  it('stops on a host state_hash that differs from our root (divergence)', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    const liar = t.net.hostOfSlot(4);
    liar.behaviour.wrongStateHash = true;
    await advanceTo(s, liar.slots);
    await s.infer(request());
    expect(s.fault?.code).toBe(SessionErrorCode.Diverged);
    expect(t.events.some((e) => e.type === 'divergence' && e.host === liar.address)).toBe(true);
    await expect(s.infer(request())).rejects.toMatchObject({ code: SessionErrorCode.Diverged });
    expect(s.canStartInference).toBe(false);
  });

  it('queues only host txs that verify: no forged Finish, no user txs from a mempool', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    const staller = t.net.hostOfSlot(3);
    staller.behaviour.stall = true;
    await advanceTo(s, staller.slots);
    const stalled = await s.infer(request());
    expect(stalled).toMatchObject({ confirmed: true, finished: false });
    // The next executor offers a Finish for the stalled inference signed by itself, and a Start.
    const forger = t.net.hostOfSlot(Number((s.latestNonce + 1n) % 16n));
    const slot = stalled.executorSlot;
    forger.behaviour.extraMempool = () => [
      txOf.finishInference(
        signFinish(
          forger.key,
          newMsg.finishInference({ inferenceId: stalled.nonce, executorSlot: slot, escrowId: ESCROW_ID }),
        ),
      ),
      txOf.startInference(newMsg.startInference({ inferenceId: 999n, maxTokens: 64n })),
    ];
    await s.infer(request());
    const rejected = t.events.filter((e) => e.type === 'host_tx_rejected' && e.host === forger.address);
    expect(rejected).toEqual([
      { type: 'host_tx_rejected', host: forger.address, kind: 'finishInference', reason: 'bad_signature' },
      { type: 'host_tx_rejected', host: forger.address, kind: 'startInference', reason: 'kind' },
    ]);
    await s.flush();
    expect(s.state.inferences.get(stalled.nonce)?.status).toBe(InferenceStatus.Started);
  });

  it('checks max_tokens and the balance before composing', async () => {
    const t = setup({ amount: 20_000n });
    await t.init();
    const s = await t.open();
    await expect(s.infer(request(10n))).rejects.toMatchObject({ code: SessionErrorCode.MaxTokensBelowFloor });
    // balance 10 000 < (30 + 2 000) × 10 + 1 000, but a smaller request fits: this request exceeds
    // the escrow, which is not depleted (funding.ts).
    await expect(s.infer(request(2_000n))).rejects.toMatchObject({
      code: SessionErrorCode.RequestExceedsEscrow,
      needed: 21_300n,
      available: 9_000n,
    });
    expect((await t.store.load(ESCROW_ID))!.diffs).toHaveLength(0);
    expect(t.net.calls).toHaveLength(0);
    expect((await s.infer(request(500n))).status).toBe('completed'); // 5 300 + 1 000 fits
    // Its Finish waits in the queue, so the balance alone (3 700) is short of the next 6 300; the
    // next diff applies that Finish first and returns 5 300 − 500: the same request fits.
    expect(s.balance).toBe(3_700n);
    expect(s.pendingTxCount).toBeGreaterThan(0);
    expect((await s.infer(request(500n))).status).toBe('completed');
  });

  it('calls an escrow that cannot pay the smallest inference depleted, before any nonce', async () => {
    // balance 1 500 < fee 1 000 + floor 64 × price 10: no request of any size fits.
    const t = setup({ amount: 11_500n });
    await t.init();
    const s = await t.open();
    await expect(s.infer(request(64n))).rejects.toMatchObject({
      code: SessionErrorCode.InsufficientBalance,
      needed: (30n + 64n) * 10n + 1_000n,
      available: 500n,
    });
    expect(s.latestNonce).toBe(0n);
    expect(t.net.calls).toHaveLength(0);
  });

  it('stops new work before max_nonce, keeping the finalize reserve', async () => {
    const t = setup({ maxNonce: 60n });
    await t.init();
    const s = await t.open({ nonceReserve: 20n });
    expect(s.workLimit).toBe(40n);
    for (let i = 0; i < 40; i++) await s.infer(request());
    expect(s.canStartInference).toBe(false);
    await expect(s.infer(request())).rejects.toMatchObject({ code: SessionErrorCode.NonceLimit });
    const doc = await s.finalize();
    expect(doc.payload.nonce).toBeLessThanOrEqual(60n);
    expect(doc.payload.nonce).toBe(57n); // round 0 at 41 (the pending Confirm/Finish), final at 41 + 16
  });

  it('does not let a throwing handler stop the stream', async () => {
    const t = setup();
    await t.init();
    const s = await t.open();
    const r = await s.infer(request(), {
      onChunk: () => {
        throw new Error('client went away');
      },
    });
    expect(r).toMatchObject({ status: 'completed', finished: true });
    expect(t.events.filter((e) => e.type === 'handler_error')).toHaveLength(2);
  });
});
