// Validations on the devnet (devshard-protocol.md §5.4 Validation / ValidationVote): with the chain's
// validation_rate at 5 000 bp the hosts validate about half of what they did not execute, a host with
// the `bad-output` fault gets its altered answers Invalidated (cost refunded, `invalid` counted), a
// host with `false-invalid` challenges honest answers and is voted down; through all of it the
// gateway's and every host's roots stay equal, and the settlement moves every ngonka as the ledger
// recomputed from the stored diffs says. 200 requests in the suite; `pnpm test:validations` runs 500
// (`VALIDATION_REQUESTS` sets any count). The liar's 6 altered answers fit in either.
import { InferenceStatus, SessionPhase } from '@gonka-gateway/devshard';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatCase, inPool, serve } from './chat-cases.js';
import { Gateway } from './harness.js';
import { ledgerFromStore, settleAndCheck } from './settle.js';

const REQUESTS = Number(process.env.VALIDATION_REQUESTS ?? 200);
const CONCURRENCY = 8;

let gateway: Gateway;

beforeAll(async () => {
  gateway = await Gateway.start({
    params: (p) => {
      p.devshardEscrow.validationRate = 5_000;
    },
  });
});

afterAll(async () => {
  await gateway?.close();
});

describe('validations and validation votes at 5 000 bp', () => {
  it(`serves ${REQUESTS} mixed requests with a bad executor and a false accuser; roots equal; settlement exact`, async () => {
    // Four hosts, none holding more than the vote threshold alone, so votes decide.
    const escrow = await gateway.escrow(
      (g) => g.size === 4 && [...g.values()].every((s) => s.length <= 7),
      'four hosts, none above 7 slots',
    );
    expect(escrow.row.validationRate).toBe(5_000);
    const [liar, accuser] = [...escrow.group.entries()]
      .sort((a, b) => a[1].length - b[1].length)
      .map(([address]) => address);
    // The liar alters 6 answers; the accuser calls everything it validates invalid.
    await gateway.devnet.devshardHosts.setFault(escrow.nameOf(liar!), { mode: 'bad-output', remaining: 6 });
    await gateway.devnet.devshardHosts.setFault(escrow.nameOf(accuser!), { mode: 'false-invalid' });
    const session = await escrow.open();

    const cases = Array.from({ length: REQUESTS }, (_, i) => chatCase(i, 'validation'));
    await inPool(cases, CONCURRENCY, async (c) => {
      const s = await serve(session, c);
      expect(s.result).toMatchObject({ status: 'completed', confirmed: true, finished: true });
    });
    // Idle flushes carry the last validations and votes the hosts proposed.
    for (let i = 0; i < 6; i++) {
      for (const address of escrow.hosts) await session.catchUpHost(address);
      await session.flush();
    }
    expect(session.fault).toBeUndefined();
    for (const type of ['divergence', 'bad_state_signature', 'store_error']) {
      expect(escrow.events.filter((e) => e.type === type)).toEqual([]);
    }
    for (const address of escrow.hosts) await session.catchUpHost(address);
    escrow.expectHostsInSync(session);

    const ledger = await ledgerFromStore(escrow);
    const fates = [...ledger.inferences.values()].map((e) => e.fate);
    const count = (f: string) => fates.filter((x) => x === f).length;
    // Validations happened, some were challenged, and the liar's answers were invalidated.
    const validated = [...ledger.inferences.values()].filter((e) => e.validatedBy.size > 0).length;
    expect(validated).toBeGreaterThan(REQUESTS / 4);
    expect(count('validated') + count('invalidated')).toBeGreaterThan(0);
    const liarSlots = escrow.group.get(liar!)!;
    expect(liarSlots.reduce((a, s) => a + ledger.invalid[s]!, 0)).toBeGreaterThan(0);
    // Only the liar's altered answers are ever invalidated: the accuser is outvoted.
    for (const [slot, n] of ledger.invalid.entries()) if (n > 0) expect(liarSlots).toContain(slot);
    const state = session.state;
    for (const [id, e] of ledger.inferences) {
      const live = state.inferences.get(id);
      if (live && e.fate === 'invalidated') expect(live.status).toBe(InferenceStatus.Invalidated);
    }

    const fin = await session.finalize();
    expect(session.phase).toBe(SessionPhase.Settlement);
    escrow.expectHostsInSync(session);
    await settleAndCheck(escrow, session, fin);
  }, 600_000);
});
