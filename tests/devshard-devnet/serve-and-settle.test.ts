// One session serves 200 chat requests over the 16 slots of the 4 devnet hosts, through
// UserSession + HttpHostTransport (devshard-protocol.md §7), finalizes (§8.1–§8.3) and settles on
// the devnet chain (§8.4, chain-and-network.md §2.6) with every balance accounted for to the last
// ngonka.
import { InferenceStatus, SessionPhase } from '@gonka-gateway/devshard';
import type { UserSession } from '@gonka-gateway/devshard/session';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ChatCase,
  chatCase,
  expectedCompletion,
  expectProperCompletion,
  inPool,
  type Served,
  serve,
  serveUntilNextTargets,
} from './chat-cases.js';
import { Gateway, hasOutvotableHost, outvotableHost, type TestEscrow } from './harness.js';
import { ledgerFromStore, settleAndCheck } from './settle.js';

const REQUESTS = 200;
const CONCURRENCY = 8;

let gateway: Gateway;

beforeAll(async () => {
  gateway = await Gateway.start();
});

afterAll(async () => {
  await gateway?.close();
});

describe('a session over the devnet hosts, finalized and settled', () => {
  it('serves 200 mixed chat requests; hosts agree; fees, refund and every payout are exact', async () => {
    const escrow = await gateway.escrow((g) => g.size === 4, 'all four hosts in the group');
    expect(escrow.slots).toHaveLength(16);
    const session = await escrow.open();

    const cases = Array.from({ length: REQUESTS }, (_, i) => chatCase(i));
    const served = new Map<bigint, { index: number; served: Served }>();
    await inPool(
      cases.map((c, index) => ({ c, index })),
      CONCURRENCY,
      async ({ c, index }) => {
        const s = await serve(session, c);
        served.set(s.result.nonce, { index, served: s });
      },
    );

    // Every request took its own nonce 1…200 and came back as a proper OpenAI answer.
    expect([...served.keys()].sort((a, b) => Number(a - b))).toEqual(
      Array.from({ length: REQUESTS }, (_, i) => BigInt(i + 1)),
    );
    const streamed = cases.filter((c) => c.input.stream).length;
    expect(streamed).toBeGreaterThan(0);
    expect(streamed).toBeLessThan(REQUESTS);
    for (const [nonce, { index, served: s }] of served) {
      expect(s.result, `nonce ${nonce}`).toMatchObject({
        nonce,
        executor: escrow.executorOf(nonce),
        status: 'completed',
        confirmed: true,
        finished: true,
      });
      expect(s.result.error).toBeUndefined();
      // One receipt event, for this nonce, confirmed (also when another answer's diff applied the
      // Confirm first: concurrent-sends.test.ts).
      expect(s.receipts).toEqual([{ nonce, confirmed: true }]);
      expectProperCompletion(cases[index]!, expectedCompletion(gateway.devnet, cases[index]!), s);
    }
    expect(session.fault).toBeUndefined();
    for (const type of ['divergence', 'bad_state_signature', 'host_error', 'host_tx_rejected', 'store_error'])
      expect(escrow.events.filter((e) => e.type === type)).toEqual([]);
    // Every host executed a share: the 16 slots cover the 4 hosts.
    const executors = new Set([...served.values()].map((v) => v.served.result.executor));
    expect(executors.size).toBe(4);

    const fin = await session.finalize();
    expect(session.phase).toBe(SessionPhase.Settlement);
    expect(fin.signatures).toHaveLength(16); // every host signed the final nonce, for each of its slots
    escrow.expectHostsInSync(session);

    // The Finish of every inference carries the token counts of the answer the client got.
    const ledger = await ledgerFromStore(escrow);
    for (const [nonce, { index }] of served) {
      const expected = expectedCompletion(gateway.devnet, cases[index]!);
      expect(ledger.inferences.get(nonce)).toMatchObject({
        fate: 'finished',
        inputTokens: BigInt(expected.promptTokens),
        outputTokens: BigInt(expected.completionTokens),
        cost: BigInt(expected.promptTokens + expected.completionTokens) * escrow.row.tokenPrice,
      });
    }

    const { paidTo } = await settleAndCheck(escrow, session, fin);
    expect(paidTo).toBe('epoch');
    // A second finalize returns the stored document and sends nothing.
    const nonce = session.latestNonce;
    expect((await session.finalize()).json).toBe(fin.json);
    expect(session.latestNonce).toBe(nonce);
  }, 240_000);
});

/** Serves requests, `CONCURRENCY` at a time, until the session's latest nonce is `nonce`. */
async function serveUpTo(session: UserSession, nonce: bigint, next: () => ChatCase): Promise<void> {
  const cases = Array.from({ length: Number(nonce - session.latestNonce) }, next);
  await inPool(cases, CONCURRENCY, async (c) => {
    const s = await serve(session, c);
    expect(s.result).toMatchObject({ status: 'completed', confirmed: true, finished: true });
  });
  expect(session.latestNonce).toBe(nonce);
}

/** Every host's root at its latest nonce is the one the session stored for that nonce. */
async function expectHostsAgree(escrow: TestEscrow): Promise<void> {
  const stored = (await escrow.store.load(escrow.id.toString()))!;
  for (const address of escrow.hosts) {
    const replica = escrow.hostSession(address);
    const ours = stored.diffs[Number(replica.latestNonce) - 1]!;
    expect(Buffer.from(replica.state.root).toString('hex')).toBe(Buffer.from(ours.root).toString('hex'));
  }
}

describe('sealing in a long session (devshard-protocol.md §5.6)', () => {
  it('seals old Finished and TimedOut records at the auto-seal nonce as the hosts do; the session still settles exactly', async () => {
    const { devnet } = gateway;
    const escrow = await gateway.escrow(hasOutvotableHost, 'a host the others can outvote');
    // The row's seal settings, not the §12 #7 defaults: hosts seal with these.
    const config = escrow.record.escrow;
    expect(config.inferenceSealGraceNonces).toBe(160n);
    expect(config.autoSealEveryNNonces).toBe(150n);
    const sealNonce = 300n; // the first multiple of 150 with sealable ids (id ≤ 300 − 160)
    const session = await escrow.open();
    let i = 0;
    const next = () => chatCase(i++, ' seal');

    // An early refusal, timed out: a terminal record, sealed by the nonce gate alone.
    const refuser = outvotableHost(escrow.group)!;
    await serveUntilNextTargets(session, (n) => escrow.executorOf(n), refuser, next);
    await devnet.devshardHosts.setFault(refuser, { mode: 'refuse' });
    const refused = (await serve(session, next())).result.nonce;
    devnet.blocks.advanceTime(Number(escrow.record.chainParams.refusalTimeout! + 6n) * 1000);
    // The voters' challenge must find the executor still refusing, or it would serve after all.
    expect(await session.checkTimeouts()).toMatchObject([{ inferenceId: refused, outcome: 'applied' }]);
    await devnet.devshardHosts.setFault(refuser, null);

    // Records confirmed now, then the clock moves past seal_grace_seconds + execution_timeout (v5).
    await serveUpTo(session, 100n, next);
    const early = session.latestNonce;
    const graceSeconds = config.inferenceSealGraceSeconds! + escrow.record.chainParams.executionTimeout!;
    devnet.blocks.advanceTime(Number(graceSeconds + 10n) * 1000);
    await serveUpTo(session, sealNonce - 1n, next);
    expect(session.state.sealedAcc.every((b) => b === 0)).toBe(true); // nothing sealed at nonce 150
    await serveUpTo(session, sealNonce + 16n, next); // every slot, so every host, past the seal nonce

    // Sealed at 300: every id ≤ `early` (old enough, or TimedOut); ids in (early, 140] were confirmed
    // after the clock moved and stay live, as does everything above 140 (nonce gate).
    const live = [...session.state.inferences.keys()];
    expect(live.filter((id) => id <= early)).toEqual([]);
    for (let id = early + 1n; id <= sealNonce - config.inferenceSealGraceNonces!; id++) {
      expect(session.state.inferences.get(id)?.status).toBe(InferenceStatus.Finished);
    }
    expect(session.state.sealedAcc.some((b) => b !== 0)).toBe(true);
    expect(escrow.eventsOf('divergence')).toEqual([]);
    await expectHostsAgree(escrow);

    const fin = await session.finalize();
    escrow.expectHostsInSync(session);
    const { paidTo } = await settleAndCheck(escrow, session, fin);
    expect(paidTo).toBe('epoch');
    expect(fin.document.host_stats[Number(refused % 16n)]!.missed).toBe(1);
  }, 240_000);
});
