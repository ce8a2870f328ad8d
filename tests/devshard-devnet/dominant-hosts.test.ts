// A dominant host on the devnet (packages/devshard session/dominant-hosts.ts): with 9 or more of 16
// slots a host cannot be outvoted on a timeout (the others weigh ≤ 7, a timeout needs > 8), so it
// could refuse every request and be paid each reservation at the settlement drain (§5.6). After its
// first refusal the session burns its nonces (fee only) instead of starting inferences there; the
// finalize gate reports the one refused inference as unresolvable, and only an explicit
// `billUnresolved` finalize pays it — at most one reservation, whatever the traffic.
import { InferenceStatus } from '@gonka-gateway/devshard';
import { SessionErrorCode } from '@gonka-gateway/devshard/session';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatCase, serve } from './chat-cases.js';
import { Gateway } from './harness.js';
import { ledgerFromStore, settleAndCheck } from './settle.js';

let gateway: Gateway;

beforeAll(async () => {
  gateway = await Gateway.start();
});

afterAll(async () => {
  await gateway?.close();
});

describe('a dominant refusing host', () => {
  it('holding 9 of 16 slots is paid at most one reservation', async () => {
    const { devnet } = gateway;
    const escrow = await gateway.escrow(
      (g) => g.size >= 2 && [...g.values()].some((s) => s.length >= 9),
      'a host with 9 slots or more',
    );
    const heavy = escrow.hosts.find((a) => escrow.slotCount(a) >= 9)!;
    const session = await escrow.open();
    expect(session.hostRisk()).toMatchObject({ dominant: [heavy], blocked: [] });
    await devnet.devshardHosts.setFault(heavy, { mode: 'refuse' });

    const REQUESTS = 24;
    const results = [];
    for (let i = 0; i < REQUESTS; i++) results.push((await serve(session, chatCase(i, ' dominant'))).result);
    const refusedByHeavy = results.filter((r) => r.executor === heavy);
    expect(refusedByHeavy).toHaveLength(1); // its first refusal blocked it
    expect(refusedByHeavy[0]).toMatchObject({ confirmed: false, finished: false });
    const id = refusedByHeavy[0]!.nonce;
    for (const r of results) {
      if (r.executor !== heavy)
        expect(r).toMatchObject({ status: 'completed', confirmed: true, finished: true });
    }
    const risk = session.hostRisk();
    expect(risk).toMatchObject({ dominant: [heavy], blocked: [heavy] });
    expect(risk.burnedNonces).toBeGreaterThan(REQUESTS / 2); // ≥ 9 of every 16 nonces after the refusal
    expect(escrow.eventsOf('dominant_host_blocked')).toEqual([
      { type: 'dominant_host_blocked', host: heavy, inferenceId: id },
    ]);

    // Past the refusal deadline the others vote, but 7 slots at most cannot carry a timeout.
    devnet.blocks.advanceTime(Number(escrow.record.chainParams.refusalTimeout! + 6n) * 1000);
    await expect(session.finalize()).rejects.toMatchObject({
      code: SessionErrorCode.CompletionPending,
      nonces: [id],
      unresolvable: [id],
    });
    expect(session.state.inferences.get(id)?.status).toBe(InferenceStatus.Pending);
    const fin = await session.finalize({ billUnresolved: true });
    await devnet.devshardHosts.setFault(heavy, null);

    // The heavy host's slots are paid exactly the one reservation; every burned nonce cost a fee only.
    const ledger = await ledgerFromStore(escrow);
    const heavySlots = escrow.group.get(heavy)!;
    const reserved = ledger.inferences.get(id)!.reserved;
    expect(heavySlots.reduce((a, s) => a + ledger.cost[s]!, 0n)).toBe(reserved);
    expect([...ledger.inferences.values()].filter((e) => heavySlots.includes(e.slot))).toHaveLength(1);
    await settleAndCheck(escrow, session, fin);
  }, 120_000);
});
