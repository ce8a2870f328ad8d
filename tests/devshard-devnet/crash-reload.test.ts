// A gateway that dies mid-session is replaced by a new owner on the same store, whose open mints a
// higher fencing token (architecture §2.1–§2.3). The new session replays the stored diffs,
// continues at the next nonce and never signs a nonce again; the hosts accept the continuation; the
// old writer is fenced out of the store.
import { InferenceStatus, SessionPhase } from '@gonka-gateway/devshard';
import {
  InMemorySessionStore,
  isSessionError,
  SessionErrorCode,
  type SessionStore,
  SessionStoreErrorCode,
  type StoredDiff,
} from '@gonka-gateway/devshard/session';
import { wrapStore } from '@gonka-gateway/devshard/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatCase, inPool, serve } from './chat-cases.js';
import { Gateway } from './harness.js';
import { RecordingTransport } from './recording-transport.js';
import { settleAndCheck } from './settle.js';

let gateway: Gateway;

beforeAll(async () => {
  gateway = await Gateway.start();
});

afterAll(async () => {
  await gateway?.close();
});

/** The store with `before` called ahead of every appendDiff (it may throw: the write then fails). */
function withAppendDiff(
  inner: SessionStore,
  before: (diff: StoredDiff, token: bigint) => void,
): SessionStore {
  return wrapStore(inner, {
    appendDiff: async (i, diff, token, writes) => {
      before(diff, token);
      return inner.appendDiff(i, diff, token, writes);
    },
  });
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** What a signed diff is, byte for byte: nonce, txs, root and the creator's signature. */
const fingerprint = (d: StoredDiff) => ({
  nonce: d.nonce,
  txs: d.diff.txs.map((t) => hex(t.bytes)),
  postStateRoot: hex(d.diff.postStateRoot),
  userSig: hex(d.diff.userSig),
});

describe('a session reloaded from storage after a crash', () => {
  it('continues at the next nonce without re-signing any; hosts accept it; the old writer is fenced', async () => {
    const { devnet } = gateway;
    const escrow = await gateway.escrow((g) => g.size >= 2, 'two hosts or more');
    const id = escrow.id.toString();

    // Writer 1 (fencing token 1, minted at open) serves, then dies right after the write-ahead of an inference,
    // before its send leaves the process.
    let recorder1: RecordingTransport | undefined;
    const first = await escrow.open({ wrapTransport: (t) => (recorder1 = new RecordingTransport(t)) });
    await inPool(
      Array.from({ length: 24 }, (_, i) => chatCase(i, ' first')),
      4,
      async (c) => {
        const s = await serve(first, c);
        expect(s.result).toMatchObject({ status: 'completed', confirmed: true, finished: true });
      },
    );
    recorder1!.failBeforeSend = (send) => (send.payload ? new Error('gateway process died') : undefined);
    const orphan = await serve(first, chatCase(99, ' orphan'));
    expect(orphan.result).toMatchObject({ status: 'failed', confirmed: false });
    const crashedAt = first.latestNonce;
    expect(orphan.result.nonce).toBe(crashedAt);
    expect(recorder1!.sends.some((s) => s.diffNonces.includes(crashedAt))).toBe(false); // no host has it
    const stored = (await escrow.store.load(id))!;
    expect(stored.diffs.map((d) => d.nonce)).toEqual(
      Array.from({ length: Number(crashedAt) }, (_, i) => BigInt(i + 1)),
    );
    const before = stored.diffs.map(fingerprint);
    const pendingBefore = first.pendingTxCount;

    // Writer 2 takes over on the same store (its open mints token 2).
    const appended: { nonce: bigint; token: bigint }[] = [];
    const store = withAppendDiff(escrow.store, (diff, token) => {
      appended.push({ nonce: diff.nonce, token });
    });
    let recorder2: RecordingTransport | undefined;
    const second = await escrow.open({
      store,
      wrapTransport: (t) => (recorder2 = new RecordingTransport(t)),
    });
    expect(second.latestNonce).toBe(crashedAt);
    expect(hex(second.state.root)).toBe(hex(first.state.root));
    expect(second.balance).toBe(first.balance);
    expect(second.pendingTxCount).toBe(pendingBefore);
    expect(second.state.inferences.get(crashedAt)?.status).toBe(InferenceStatus.Pending);

    // The old writer is fenced: it cannot append, and the store is unchanged.
    await expect(serve(first, chatCase(100, ' stale'))).rejects.toMatchObject({
      code: SessionErrorCode.OwnershipLost,
    });
    expect(first.fault?.code).toBe(SessionErrorCode.OwnershipLost);
    await expect(first.flush()).rejects.toSatisfy((e) => isSessionError(e));
    await expect(escrow.store.appendDiff(id, stored.diffs.at(-1)!, 1n)).rejects.toMatchObject({
      code: SessionStoreErrorCode.StaleToken,
    });
    expect((await escrow.store.load(id))!.diffs).toHaveLength(Number(crashedAt));

    // Writer 2 continues; every host takes the continuation (the orphan diff by catch-up first).
    for (let i = 0; i < 20; i++) {
      const s = await serve(second, chatCase(i, ' second'));
      expect(s.result).toMatchObject({
        nonce: crashedAt + BigInt(i) + 1n,
        status: 'completed',
        confirmed: true,
        finished: true,
      });
    }
    expect(appended.map((a) => a.nonce)).toEqual(
      Array.from({ length: 20 }, (_, i) => crashedAt + BigInt(i) + 1n),
    );
    expect(appended.every((a) => a.token === 2n)).toBe(true);
    expect(recorder2!.sends.filter((s) => s.diffNonces.includes(crashedAt)).length).toBeGreaterThan(0);
    expect(escrow.eventsOf('divergence')).toEqual([]);
    expect(second.fault).toBeUndefined();

    // The orphan inference (persisted, never sent) is still Pending. Once refusal_timeout has passed
    // the voters challenge its executor with the payload the new session restored from the store: the
    // executor (healthy) signs a receipt and runs it, so every voter rejects the timeout and hands back
    // its Confirm and Finish. The inference is then charged like any other.
    expect(second.state.inferences.get(crashedAt)?.status).toBe(InferenceStatus.Pending);
    devnet.blocks.advanceTime(Number(escrow.record.chainParams.refusalTimeout! + 6n) * 1000);
    const queued = second.pendingTxCount;
    expect(await second.checkTimeouts()).toEqual([
      { inferenceId: crashedAt, reason: 'refused', outcome: 'insufficient_votes', acceptWeight: 0 },
    ]);
    expect(second.pendingTxCount).toBe(queued + 2);
    await second.flush();
    expect(second.state.inferences.get(crashedAt)?.status).toBe(InferenceStatus.Finished);

    const fin = await second.finalize();
    escrow.expectHostsInSync(second);
    // No nonce was signed twice: the store's first diffs are byte-identical to before the crash, and
    // every host holds exactly the store's diff (same signature) at every nonce.
    const after = (await escrow.store.load(id))!.diffs;
    expect(after.slice(0, before.length).map(fingerprint)).toEqual(before);
    for (const address of escrow.hosts) {
      const replica = escrow.hostSession(address);
      for (const d of after) expect(hex(replica.applied(d.nonce)!.wire.userSig)).toBe(hex(d.diff.userSig));
    }
    await settleAndCheck(escrow, second, fin);
  }, 60_000);

  it('a crash in the middle of finalize: the new owner finishes the rounds from the store and settles', async () => {
    const escrow = await gateway.escrow((g) => g.size >= 2, 'two hosts or more');
    const id = escrow.id.toString();
    const n = BigInt(escrow.slots.length);
    let dieAfter: bigint | undefined;
    const dying = withAppendDiff(escrow.store, (diff) => {
      if (dieAfter !== undefined && diff.nonce > dieAfter) throw new Error('database gone');
    });
    const first = await escrow.open({ store: dying });
    for (let i = 0; i < 12; i++) {
      const s = await serve(first, chatCase(i, ' fin'));
      expect(s.result).toMatchObject({ status: 'completed', confirmed: true, finished: true });
    }
    // FinalizeRound goes at F = latest + 1; the writer dies after persisting round F + 5.
    const f = first.latestNonce + 1n;
    dieAfter = f + 5n;
    await expect(first.finalize()).rejects.toMatchObject({ code: SessionErrorCode.WriteFailed });
    expect(first.latestNonce).toBe(f + 5n);
    expect(first.phase).toBe(SessionPhase.Finalizing);

    const second = await escrow.open();
    expect(second.latestNonce).toBe(f + 5n);
    expect(second.phase).toBe(SessionPhase.Finalizing);
    const fin = await second.finalize();
    expect(fin.document.nonce).toBe(f + n);
    expect(second.phase).toBe(SessionPhase.Settlement);
    const diffs = (await escrow.store.load(id))!.diffs;
    // One FinalizeRound, at F; the rounds after the crash continued the same log.
    const withFinalize = diffs.filter((d) => d.diff.txs.some((t) => t.tx.kind === 'finalizeRound'));
    expect(withFinalize.map((d) => d.nonce)).toEqual([f]);
    escrow.expectHostsInSync(second);
    for (const address of escrow.hosts) {
      const replica = escrow.hostSession(address);
      for (const d of diffs) expect(hex(replica.applied(d.nonce)!.wire.userSig)).toBe(hex(d.diff.userSig));
    }
    await settleAndCheck(escrow, second, fin);
  }, 60_000);
  it('refuses an escrow whose hosts hold diffs another store wrote: a hot-swap into another database signs nothing', async () => {
    const escrow = await gateway.escrow((g) => g.size >= 2, 'two hosts or more');
    const first = await escrow.open();
    const served = await serve(first, chatCase(1, ' served here'));
    expect(served.result).toMatchObject({ status: 'completed', confirmed: true });
    await first.close();
    // A fresh escrow's hosts answer the probe 404 (no session yet): no error was reported for it.
    expect(escrow.eventsOf('host_error').filter((e) => e.operation === 'history-probe')).toEqual([]);

    const elsewhere = new InMemorySessionStore();
    await elsewhere.create(escrow.record);
    await expect(escrow.open({ store: elsewhere })).rejects.toMatchObject({
      code: SessionErrorCode.HistoryElsewhere,
    });
    expect((await elsewhere.load(escrow.id.toString()))!.diffs).toEqual([]);
  });
});
