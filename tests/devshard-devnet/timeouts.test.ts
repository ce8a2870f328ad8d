// An executor that refuses (no receipt) is timed out by the other hosts' votes as `refused`, and
// one that stalls after its receipt (no Finish) as `execution`; each timeout returns the
// reservation to the balance and counts a miss for the executor's slot (devshard-protocol.md §5.4
// TimeoutInference, §7.4). Time moves with blocks.advanceTime and the session reads the devnet
// clock, so nothing sleeps through a deadline.
import { InferenceStatus } from '@gonka-gateway/devshard';
import { HostErrorCode } from '@gonka-gateway/devshard/session';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatCase, serve, serveUntilNextTargets } from './chat-cases.js';
import {
  Gateway,
  hasOutvotableHost,
  outvotableHost,
  timeoutWeightNeeded,
  withoutValidations,
} from './harness.js';
import { settleAndCheck } from './settle.js';

let gateway: Gateway;

beforeAll(async () => {
  gateway = await Gateway.start();
});

afterAll(async () => {
  await gateway?.close();
});

describe('timeouts by votes', () => {
  it('a refusing executor is timed out as refused; the reservation returns and its slot misses one', async () => {
    const { devnet } = gateway;
    const escrow = await gateway.escrow(hasOutvotableHost, 'a host the others can outvote');
    const refuser = outvotableHost(escrow.group)!;
    // The row froze refusal_timeout at creation (§12 #8): a later governance change must not move the
    // deadline, neither for the session nor for the hosts that vote.
    expect(escrow.record.chainParams.refusalTimeout).toBe(60n);
    const live = devnet.chain.params().devshardEscrow;
    devnet.chain.updateParams((p) => {
      p.devshardEscrow.refusalTimeout = 86_400n;
      p.devshardEscrow.executionTimeout = 86_400n;
    });
    try {
      const session = await escrow.open();
      let i = 0;
      await serveUntilNextTargets(
        session,
        (n) => escrow.executorOf(n),
        refuser,
        () => chatCase(i++, ' r'),
      );

      await devnet.devshardHosts.setFault(refuser, { mode: 'refuse' });
      const refused = await serve(session, chatCase(i++, ' refused'));
      const id = refused.result.nonce;
      // The host answered (receipt event without an executor receipt, meta, [DONE]) but ran nothing.
      // The stream ended normally, so the result is `completed`: only `confirmed` tells a refusal.
      expect(refused.result).toMatchObject({
        executor: refuser,
        status: 'completed',
        confirmed: false,
        finished: false,
      });
      expect(refused.receipts).toEqual([{ nonce: id, confirmed: false }]);
      expect(refused.lines).toEqual([]);
      expect(refused.done).toEqual(['data: [DONE]']);
      const record = session.state.inferences.get(id)!;
      expect(record.status).toBe(InferenceStatus.Pending);

      await session.flush(); // whatever is queued goes now: the timeout diff will carry only the timeout
      expect(await session.checkTimeouts()).toEqual([]); // refusal_timeout has not passed
      const balanceBefore = session.balance;
      devnet.blocks.advanceTime(Number(escrow.record.chainParams.refusalTimeout! + 6n) * 1000);
      const outcomes = await session.checkTimeouts();
      expect(outcomes).toEqual([
        { inferenceId: id, reason: 'refused', outcome: 'applied', acceptWeight: expect.any(Number) },
      ]);
      expect(outcomes[0]!.acceptWeight).toBeGreaterThanOrEqual(timeoutWeightNeeded(escrow.row));
      expect(withoutValidations(escrow.eventsOf('diff').at(-1)!.txs)).toEqual(['timeoutInference']);
      expect(session.state.inferences.get(id)!.status).toBe(InferenceStatus.TimedOut);
      expect(session.balance).toBe(balanceBefore + record.reservedCost - escrow.row.feePerNonce);
      const slot = Number(id % 16n);
      expect(session.state.hostStats.map((h) => h.missed)).toEqual(
        escrow.slots.map((_, s) => (s === slot ? 1 : 0)),
      );

      await devnet.devshardHosts.setFault(refuser, null);
      await serveUntilNextTargets(
        session,
        (n) => escrow.executorOf(n),
        refuser,
        () => chatCase(i++, ' r2'),
      );
      const s = await serve(session, chatCase(i++, ' after'));
      expect(s.result).toMatchObject({
        executor: refuser,
        status: 'completed',
        confirmed: true,
        finished: true,
      });

      const fin = await session.finalize();
      escrow.expectHostsInSync(session);
      expect(fin.document.host_stats[slot]!.missed).toBe(1);
      await settleAndCheck(escrow, session, fin);
    } finally {
      devnet.chain.updateParams((p) => {
        p.devshardEscrow.refusalTimeout = live.refusalTimeout;
        p.devshardEscrow.executionTimeout = live.executionTimeout;
      });
    }
  }, 60_000);

  it('an executor that stalls after its receipt is timed out as execution; the reservation returns', async () => {
    const { devnet } = gateway;
    const escrow = await gateway.escrow(hasOutvotableHost, 'a host the others can outvote');
    const staller = outvotableHost(escrow.group)!;
    // After the client leaves, the session reads the stream's tail for its Finish for at most
    // disconnectTailMs; the staller never sends one, so a short tail keeps the test from waiting out
    // the 30 s default. The outcome (failed, aborted, Started until the vote) is the same.
    const session = await escrow.open({ disconnectTailMs: 300 });
    let i = 0;
    await serveUntilNextTargets(
      session,
      (n) => escrow.executorOf(n),
      staller,
      () => chatCase(i++, ' s'),
    );

    // The receipt arrives, then the stream hangs; the client gives up (a proxy's client disconnects).
    await devnet.devshardHosts.setFault(staller, { mode: 'stall-after-receipt', remaining: 1 });
    const leave = new AbortController();
    const stalled = await serve(session, chatCase(i++, ' stalled'), {
      signal: leave.signal,
      onReceipt: () => leave.abort(),
    });
    const id = stalled.result.nonce;
    expect(stalled.result).toMatchObject({
      executor: staller,
      status: 'failed',
      confirmed: true,
      finished: false,
    });
    expect(stalled.result.error).toMatchObject({ code: HostErrorCode.Aborted });
    expect(stalled.lines).toEqual([]);

    await session.flush(); // the Confirm: the inference is Started, its execution clock runs
    const record = session.state.inferences.get(id)!;
    expect(record.status).toBe(InferenceStatus.Started);
    // (The flush's answer may queue validations the hosts proposed: no pendingTxCount check.)
    expect(await session.checkTimeouts()).toEqual([]); // execution_timeout has not passed
    const balanceBefore = session.balance;
    devnet.blocks.advanceTime(Number(escrow.record.chainParams.executionTimeout! + 6n) * 1000);
    const outcomes = await session.checkTimeouts();
    expect(outcomes).toEqual([
      { inferenceId: id, reason: 'execution', outcome: 'applied', acceptWeight: expect.any(Number) },
    ]);
    expect(outcomes[0]!.acceptWeight).toBeGreaterThanOrEqual(timeoutWeightNeeded(escrow.row));
    expect(withoutValidations(escrow.eventsOf('diff').at(-1)!.txs)).toEqual(['timeoutInference']);
    expect(session.state.inferences.get(id)!.status).toBe(InferenceStatus.TimedOut);
    expect(session.balance).toBe(balanceBefore + record.reservedCost - escrow.row.feePerNonce);
    const slot = Number(id % 16n);
    expect(session.state.hostStats.map((h) => h.missed)).toEqual(
      escrow.slots.map((_, s) => (s === slot ? 1 : 0)),
    );

    // The staller serves again (the fault took one request).
    await serveUntilNextTargets(
      session,
      (n) => escrow.executorOf(n),
      staller,
      () => chatCase(i++, ' s2'),
    );
    const s = await serve(session, chatCase(i++, ' after'));
    expect(s.result).toMatchObject({
      executor: staller,
      status: 'completed',
      confirmed: true,
      finished: true,
    });

    const fin = await session.finalize();
    escrow.expectHostsInSync(session);
    expect(fin.document.host_stats[slot]!.missed).toBe(1);
    await settleAndCheck(escrow, session, fin);
  }, 60_000);

  it('a refuser holding more than the vote threshold cannot be voted out: settlement charges it the full reservation', async () => {
    const { devnet } = gateway;
    // Its slots are ≥ 8 of 16: the rest weigh at most vote_threshold (8), never more (§5.4).
    const escrow = await gateway.escrow(
      (g, row) => [...g.values()].some((slots) => 16 - slots.length < timeoutWeightNeeded(row)),
      'a host the others cannot outvote',
    );
    const heavy = escrow.hosts.find((a) => 16 - escrow.slotCount(a) < timeoutWeightNeeded(escrow.row))!;
    const session = await escrow.open();
    let i = 0;
    await serveUntilNextTargets(
      session,
      (n) => escrow.executorOf(n),
      heavy,
      () => chatCase(i++, ' h'),
    );
    await devnet.devshardHosts.setFault(heavy, { mode: 'refuse' });
    const refused = await serve(session, chatCase(i++, ' heavy refused'));
    const id = refused.result.nonce;
    expect(refused.result).toMatchObject({ confirmed: false, finished: false });

    devnet.blocks.advanceTime(Number(escrow.record.chainParams.refusalTimeout! + 6n) * 1000);
    // Every other host accepts, and still the weight stays at or below the threshold.
    expect(await session.checkTimeouts()).toEqual([
      {
        inferenceId: id,
        reason: 'refused',
        outcome: 'insufficient_votes',
        acceptWeight: 16 - escrow.slotCount(heavy),
      },
    ]);
    await devnet.devshardHosts.setFault(heavy, null);
    expect(session.state.inferences.get(id)?.status).toBe(InferenceStatus.Pending);

    // The finalize gate refuses to bill it silently: completion_pending, listed as unresolvable.
    await expect(session.finalize()).rejects.toMatchObject({
      code: 'completion_pending',
      nonces: [id],
      unresolvable: [id],
    });
    // Only an explicit choice bills it. Still Pending at Settlement: the drain charges the
    // reservation to the executor's slot (§5.6), with no miss recorded — the refusing host is paid as
    // if it had served the whole max_tokens (dominant-hosts.test.ts: at most once).
    const reserved = session.state.inferences.get(id)!.reservedCost;
    const fin = await session.finalize({ billUnresolved: true });
    escrow.expectHostsInSync(session);
    const slot = Number(id % 16n);
    expect(fin.document.host_stats[slot]).toMatchObject({ missed: 0 });
    expect(fin.document.host_stats[slot]!.cost).toBeGreaterThanOrEqual(reserved);
    await settleAndCheck(escrow, session, fin);
  }, 60_000);
});
