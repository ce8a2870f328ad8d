// The finalize gate on the devnet (packages/devshard session/finalize-gate.ts): finalize never bills an
// inference that has neither a Finish nor a timeout. A refused request makes finalize answer
// `completion_pending` until its refusal deadline passes; then the gate's timeout round ends it
// TimedOut at cost 0 with a miss counted. A request served in full by one process and finalized by
// another that just took the escrow over (its Finish never persisted by the first) is billed its real
// cost: the gate recovers Confirm and Finish from the executor's mempool.
import { InferenceStatus } from '@gonka-gateway/devshard';
import { CompletionPendingError, SessionErrorCode, type SessionStore } from '@gonka-gateway/devshard/session';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatCase, expectedCompletion, serve, serveUntilNextTargets } from './chat-cases.js';
import { Gateway, hasOutvotableHost, outvotableHost } from './harness.js';
import { ledgerFromStore, settleAndCheck } from './settle.js';

let gateway: Gateway;

beforeAll(async () => {
  gateway = await Gateway.start();
});

afterAll(async () => {
  await gateway?.close();
});

/** The store as seen by a process whose pending-tx writes are lost (it crashes before they land). */
function losingPendingWrites(store: SessionStore): SessionStore {
  return new Proxy(store, {
    get(target, key) {
      if (key === 'saveWrites') return async () => undefined;
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe('the finalize gate', () => {
  it('a refused request: completion_pending until its deadline, then TimedOut at cost 0 with a miss', async () => {
    const { devnet } = gateway;
    const escrow = await gateway.escrow(hasOutvotableHost, 'a host the others can outvote');
    const refuser = outvotableHost(escrow.group)!;
    const session = await escrow.open();
    let i = 0;
    await serveUntilNextTargets(
      session,
      (n) => escrow.executorOf(n),
      refuser,
      () => chatCase(i++, ' gate'),
    );
    // Refuses also when the voters challenge it (a one-use fault would serve the challenge).
    await devnet.devshardHosts.setFault(refuser, { mode: 'refuse' });
    const refused = await serve(session, chatCase(i++, ' refused'));
    expect(refused.result).toMatchObject({ executor: refuser, confirmed: false });
    const id = refused.result.nonce;

    const pending = await session.finalize().catch((e: unknown) => e);
    expect(pending).toBeInstanceOf(CompletionPendingError);
    expect(pending).toMatchObject({
      code: SessionErrorCode.CompletionPending,
      nonces: [id],
      unresolvable: [],
    });
    expect((pending as CompletionPendingError).retryAt).toBeGreaterThan(devnet.devshardHosts.nowSeconds());
    // Still Active and usable: the gate refused before FinalizeRound.
    expect(session.canStartInference).toBe(true);

    devnet.blocks.advanceTime(Number(escrow.record.chainParams.refusalTimeout! + 6n) * 1000);
    const fin = await session.finalize();
    await devnet.devshardHosts.setFault(refuser, null);
    const slot = Number(id % 16n);
    const ledger = await ledgerFromStore(escrow);
    expect(ledger.inferences.get(id)).toMatchObject({ fate: 'timed_out', cost: 0n });
    expect(fin.document.host_stats[slot]!.missed).toBe(1);
    escrow.expectHostsInSync(session);
    await settleAndCheck(escrow, session, fin);
  }, 60_000);

  it('a request served in full before a takeover is billed its real cost, not its reservation', async () => {
    const escrow = await gateway.escrow((g) => g.size >= 2, 'two hosts or more');
    const crashing = await escrow.open({ store: losingPendingWrites(escrow.store) });
    const cases = [chatCase(1, ' takeover'), chatCase(2, ' takeover'), chatCase(3, ' takeover')];
    for (const c of cases) {
      const s = await serve(crashing, c);
      expect(s.result).toMatchObject({ status: 'completed', confirmed: true, finished: true });
    }
    const last = crashing.latestNonce;
    await crashing.close();

    // The new owner replays the store: the last inference is Pending there (its Confirm and Finish
    // were only in the crashed process's queue) and the in-flight counter is 0.
    const owner = await escrow.open();
    expect(owner.state.inferences.get(last)?.status).toBe(InferenceStatus.Pending);
    expect(owner.inFlight).toBe(0);
    const fin = await owner.finalize();

    const ledger = await ledgerFromStore(escrow);
    const expected = expectedCompletion(gateway.devnet, cases[2]!);
    const entry = ledger.inferences.get(last)!;
    expect(entry).toMatchObject({
      fate: 'finished',
      cost: BigInt(expected.promptTokens + expected.completionTokens) * escrow.row.tokenPrice,
    });
    expect(entry.cost).toBeLessThan(entry.reserved);
    // The gate recovered Confirm and Finish before finalizing: round 0 (the FinalizeRound diff)
    // carries them, instead of leaving them to whichever later round happens to reach the executor.
    const [round0Diff] = await escrow.store.readDiffs(
      escrow.id.toString(),
      ledger.finalizeNonce,
      ledger.finalizeNonce,
    );
    const round0 = round0Diff!.diff.txs.map((t) => t.tx);
    const forLast = round0.flatMap((t) =>
      (t.kind === 'confirmStart' || t.kind === 'finishInference') && t.msg.inferenceId === last
        ? [t.kind]
        : [],
    );
    expect(forLast).toEqual(['confirmStart', 'finishInference']);
    expect(round0.at(-1)?.kind).toBe('finalizeRound');
    escrow.expectHostsInSync(owner);
    await settleAndCheck(escrow, owner, fin);
  }, 60_000);
});
