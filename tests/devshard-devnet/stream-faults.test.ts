// A stream cut mid-way is detected as truncated and the session stays consistent
// (devshard-protocol.md §4.4 endings, §7.2); a host signing a wrong state root is caught
// (bad_state_signature) where signatures are used, at finalize, and never counts toward the
// settlement quorum (§7.2 step 2, §8.2).
import { InferenceStatus } from '@gonka-gateway/devshard';
import {
  HostErrorCode,
  HostTransportError,
  SessionErrorCode,
  type UserSession,
} from '@gonka-gateway/devshard/session';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatCase, expectedCompletion, serve, serveUntilNextTargets } from './chat-cases.js';
import { Gateway, quorumSlots, smallestHost, type TestEscrow } from './harness.js';
import { ledgerFromStore, settleAndCheck } from './settle.js';

let gateway: Gateway;

beforeAll(async () => {
  gateway = await Gateway.start();
});

afterAll(async () => {
  await gateway?.close();
});

/** Serves until the next nonce is `cutter`'s, then one long streamed request cut after two frames. */
async function cutOne(escrow: TestEscrow, session: UserSession, cutter: string, tag: string) {
  let i = 0;
  await serveUntilNextTargets(
    session,
    (n) => escrow.executorOf(n),
    cutter,
    () => chatCase(i++, tag),
  );
  const c = chatCase(4, `${tag} cut`); // streaming, max_tokens 1000
  expect(c.input.stream).toBe(true);
  const expected = expectedCompletion(escrow.gateway.devnet, c);
  expect(expected.completionTokens).toBeGreaterThan(2);
  await escrow.gateway.devnet.devshardHosts.setFault(cutter, { mode: 'cut-stream', remaining: 1 });
  return { cut: await serve(session, c), expected };
}

describe('a stream cut mid-way', () => {
  it('fails the inference after its first frames; its Finish comes from the executor mempool, charged in full; later requests work', async () => {
    const escrow = await gateway.escrow((g) => g.size >= 2, 'two hosts or more');
    const cutter = smallestHost(escrow.group, 16)!;
    const session = await escrow.open();
    const { cut, expected } = await cutOne(escrow, session, cutter, ' c');
    const id = cut.result.nonce;
    expect(cut.result).toMatchObject({ executor: cutter, status: 'failed', confirmed: true });
    expect(cut.result.served).toBe('truncated'); // the Finish claims more than the client got
    expect(cut.result.error).toBeInstanceOf(HostTransportError);
    expect(cut.lines).toHaveLength(2); // the role chunk and the first token reached the client
    expect(cut.done).toEqual([]);
    // The host completed the inference anyway; the one GET mempool after the break found its Finish.
    expect(cut.result.finished).toBe(true);
    expect(escrow.eventsOf('host_error')).toMatchObject([
      { host: cutter, operation: 'inference', nonce: id },
    ]);

    // Later requests work, on the same host too; the Finish rides in the next diff.
    let i = 100;
    await serveUntilNextTargets(
      session,
      (n) => escrow.executorOf(n),
      cutter,
      () => chatCase(i++, ' c2'),
    );
    const again = await serve(session, chatCase(i++, ' after'));
    expect(again.result).toMatchObject({
      executor: cutter,
      status: 'completed',
      confirmed: true,
      finished: true,
    });
    expect(session.state.inferences.get(id)?.status).toBe(InferenceStatus.Finished);
    expect(session.fault).toBeUndefined();

    const fin = await session.finalize();
    escrow.expectHostsInSync(session);
    // Charged for the whole completion the host ran, not for the two frames the client received.
    const ledger = await ledgerFromStore(escrow);
    expect(ledger.inferences.get(id)).toMatchObject({
      fate: 'finished',
      inputTokens: BigInt(expected.promptTokens),
      outputTokens: BigInt(expected.completionTokens),
    });
    await settleAndCheck(escrow, session, fin);
  }, 60_000);

  // A socket closed mid-body (undici: `TypeError: terminated`) after the receipt is a cut execution,
  // not a retryable network error: the executor may still finish and bill it.
  it('is reported as truncated_execution by the transport', async () => {
    const escrow = await gateway.escrow((g) => g.size >= 2, 'two hosts or more');
    const cutter = smallestHost(escrow.group, 16)!;
    const session = await escrow.open();
    const { cut } = await cutOne(escrow, session, cutter, ' t');
    expect(cut.result).toMatchObject({ status: 'failed', confirmed: true });
    expect(cut.result.error).toMatchObject({ code: HostErrorCode.TruncatedExecution });
  }, 60_000);
});

describe('a host signing a wrong state root', () => {
  it('is reported (bad_state_signature) and not counted toward quorum; with honest signatures the session settles', async () => {
    const { devnet } = gateway;
    const escrow = await gateway.escrow((g) => g.size >= 2, 'two hosts or more');
    // The heaviest hosts, until the honest rest is short of quorum (16 − 11 = 5 slots may be missing).
    const byWeight = escrow.hosts.sort((a, b) => escrow.slotCount(b) - escrow.slotCount(a));
    const liars: string[] = [];
    let liarSlots = 0;
    for (const address of byWeight) {
      if (16 - liarSlots < quorumSlots(16)) break;
      liars.push(address);
      liarSlots += escrow.slotCount(address);
    }
    expect(liars.length).toBeLessThan(escrow.hosts.length);
    const session = await escrow.open();
    let i = 0;
    for (let k = 0; k < 6; k++) await serve(session, chatCase(i++, ' w'));

    for (const liar of liars) await devnet.devshardHosts.setFault(liar, { mode: 'wrong-state-sig' });
    const liarNonces: bigint[] = [];
    for (const liar of liars) {
      await serveUntilNextTargets(
        session,
        (n) => escrow.executorOf(n),
        liar,
        () => chatCase(i++, ' w2'),
      );
      const s = await serve(session, chatCase(i++, ' liar'));
      // Money is untouched: the state_hash is true, only the signature over it is bent.
      expect(s.result).toMatchObject({
        executor: liar,
        status: 'completed',
        confirmed: true,
        finished: true,
      });
      liarNonces.push(s.result.nonce);
    }
    expect(session.fault).toBeUndefined();
    expect(escrow.eventsOf('divergence')).toEqual([]);
    // While serving, state signatures are kept unchecked (response.ts): nothing counts
    // them until finalize, which checks each one it uses.
    expect(escrow.eventsOf('bad_state_signature')).toEqual([]);
    for (const [k, liar] of liars.entries()) {
      const stored = await escrow.store.loadSignatures(escrow.id.toString(), liarNonces[k]!);
      for (const slot of escrow.group.get(liar)!) expect(stored.has(slot)).toBe(true);
    }

    // Finalize: the liars' signatures at the final nonce are all bad, the honest slots are < 11.
    await expect(session.finalize({ maxRounds: 2, backoffMs: 10 })).rejects.toMatchObject({
      code: SessionErrorCode.NoQuorum,
    });
    const final = session.latestNonce;
    for (const liar of liars) {
      expect(escrow.eventsOf('bad_state_signature')).toContainEqual({
        type: 'bad_state_signature',
        host: liar,
        nonce: final,
      });
    }
    const storedAtFinal = await escrow.store.loadSignatures(escrow.id.toString(), final);
    const honestSlots = escrow.slots.flatMap((a, slot) => (liars.includes(a) ? [] : [slot]));
    expect([...storedAtFinal.keys()].sort((a, b) => a - b)).toEqual(honestSlots);
    expect(honestSlots.length).toBeLessThan(quorumSlots(16));

    // The hosts sign honestly again: finalize (only collecting now) reaches quorum and settles.
    await devnet.devshardHosts.clearFaults();
    const fin = await session.finalize({ backoffMs: 10 });
    expect(session.latestNonce).toBe(final);
    expect(fin.signatures.map((s) => s.slotId)).toEqual(escrow.slots.map((_, slot) => slot));
    escrow.expectHostsInSync(session);
    await settleAndCheck(escrow, session, fin);
  }, 60_000);
});
