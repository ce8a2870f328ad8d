// A host that is down for part of the session (its server stopped, participant.stop()) catches up
// when it returns and signs the final nonce; and a finalize with one host down for good still
// reaches the slot quorum ⌊2S/3⌋+1 and settles (devshard-protocol.md §7.3, §8.1–§8.2, §8.4).
import { InferenceStatus } from '@gonka-gateway/devshard';
import { HostErrorCode } from '@gonka-gateway/devshard/session';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatCase, serve, serveUntilNextTargets } from './chat-cases.js';
import {
  Gateway,
  participantOf,
  quorumSlots,
  smallestHost,
  timeoutWeightNeeded,
  withoutValidations,
} from './harness.js';
import { RecordingTransport } from './recording-transport.js';
import { settleAndCheck } from './settle.js';

let gateway: Gateway;

beforeAll(async () => {
  gateway = await Gateway.start();
});

afterAll(async () => {
  await gateway?.close();
});

describe('a host down during the session', () => {
  it('misses its inferences (timed out as refused while it is away), then catches up in chunks and signs the final nonce', async () => {
    const { devnet } = gateway;
    // The host's refusals can be voted out only if the other slots outweigh the vote threshold (§5.4).
    const escrow = await gateway.escrow((g, row) => {
      const d = smallestHost(g, 16);
      return d !== undefined && g.size >= 2 && 16 - g.get(d)!.length >= timeoutWeightNeeded(row);
    }, 'a host whose absence leaves a timeout majority');
    const down = smallestHost(escrow.group, 16)!;
    const downSlots = escrow.group.get(down)!;
    // Small catch-up chunks make the returning host's gap span several chunks (§7.3).
    let recorder: RecordingTransport | undefined;
    const session = await escrow.open({
      catchUpChunk: 8,
      wrapTransport: (t) => (recorder = new RecordingTransport(t)),
    });
    let i = 0;
    // It serves first (its replica is bound), then goes away.
    await serveUntilNextTargets(
      session,
      (n) => escrow.executorOf(n),
      down,
      () => chatCase(i++, ' before'),
    );
    for (let k = 0; k < 3; k++) {
      const s = await serve(session, chatCase(i++, ' before'));
      expect(s.result).toMatchObject({ status: 'completed', confirmed: true, finished: true });
    }
    const heldBefore = escrow.hostSession(down).latestNonce;

    const host = participantOf(devnet, down);
    await host.stop();
    const failed: bigint[] = [];
    for (let k = 0; k < 48; k++) {
      const s = await serve(session, chatCase(i++, ' while down'));
      if (s.result.executor === down) {
        // The diff was persisted before the send: the nonce is spent, the inference is Pending.
        expect(s.result).toMatchObject({ status: 'failed', confirmed: false, finished: false });
        expect(s.result.error).toMatchObject({ code: HostErrorCode.Network });
        failed.push(s.result.nonce);
      } else {
        expect(s.result).toMatchObject({ status: 'completed', confirmed: true, finished: true });
      }
    }
    expect(failed.length).toBe(3 * downSlots.length);
    expect(escrow.hostSession(down).latestNonce).toBe(heldBefore); // it saw nothing meanwhile
    expect(session.fault).toBeUndefined();

    // Before refusal_timeout nothing is due; after it the other hosts vote: the executor cannot be
    // challenged (unreachable counts as no receipt), so each refusal is accepted and applied.
    expect(await session.checkTimeouts()).toEqual([]);
    // Queued Confirm/Finish (and validations the hosts proposed, which a flush's answer may bring)
    // in diffs of their own: the timeout diff is alone.
    for (let i = 0; i < 5 && session.pendingTxCount > 0; i++) await session.flush();
    expect(session.pendingTxCount).toBe(0);
    const balanceBefore = session.balance;
    devnet.blocks.advanceTime(Number(escrow.record.chainParams.refusalTimeout! + 6n) * 1000);
    const outcomes = await session.checkTimeouts();
    expect(withoutValidations(escrow.eventsOf('diff').at(-1)!.txs)).toEqual(
      failed.map(() => 'timeoutInference'),
    );
    expect(outcomes.map((o) => o.inferenceId).sort((a, b) => Number(a - b))).toEqual(failed);
    for (const o of outcomes) {
      expect(o).toMatchObject({ reason: 'refused', outcome: 'applied' });
      expect(o.acceptWeight).toBeGreaterThanOrEqual(timeoutWeightNeeded(escrow.row));
      expect(session.state.inferences.get(o.inferenceId)?.status).toBe(InferenceStatus.TimedOut);
    }
    // Every reservation came back, less the timeout diff's nonce fee.
    const reserved = failed.reduce((sum, id) => sum + session.state.inferences.get(id)!.reservedCost, 0n);
    expect(session.balance).toBe(balanceBefore + reserved - escrow.row.feePerNonce);
    for (const slot of downSlots) expect(session.state.hostStats[slot]!.missed).toBe(3);

    await host.start();
    const sendsBefore = recorder!.sends.length;
    for (let k = 0; k < 32; k++) {
      const s = await serve(session, chatCase(i++, ' after'));
      expect(s.result).toMatchObject({ status: 'completed', confirmed: true, finished: true });
    }
    // Its first send after the restart brought it every diff it lacked in catch-up chunks of at most
    // 8, each starting where the previous answer left it, then the inference with the rest.
    const toDown = recorder!.sends.slice(sendsBefore).filter((s) => s.address === down);
    const firstInference = toDown.findIndex((s) => s.purpose === 'inference');
    const chunks = toDown.slice(0, firstInference);
    expect(chunks.length).toBeGreaterThanOrEqual(3);
    let from = heldBefore + 1n;
    for (const chunk of chunks) {
      expect(chunk.purpose).toBe('catch-up');
      expect(chunk.diffNonces.length).toBeLessThanOrEqual(8);
      expect(chunk.diffNonces[0]).toBe(from);
      expect(chunk.nonce).toBe(chunk.diffNonces.at(-1));
      from = chunk.nonce + 1n;
    }
    expect(toDown[firstInference]!.diffNonces[0]).toBe(from);
    for (const id of failed) {
      expect(escrow.hostSession(down).state.inferences.get(id)?.status).toBe(InferenceStatus.TimedOut);
    }
    expect(escrow.eventsOf('divergence')).toEqual([]);

    const fin = await session.finalize();
    expect(fin.signatures.map((s) => s.slotId)).toEqual(escrow.slots.map((_, slot) => slot));
    escrow.expectHostsInSync(session);
    await settleAndCheck(escrow, session, fin);
  }, 120_000);
});

describe('finalize with a host down for good', () => {
  it('reaches the slot quorum without it; the document settles, paying it as well (next epoch: bank)', async () => {
    const { devnet } = gateway;
    const escrow = await gateway.escrow(
      (g) => g.size >= 2 && smallestHost(g, 16 - quorumSlots(16)) !== undefined,
      'a host whose slots leave quorum reachable',
    );
    const down = smallestHost(escrow.group, 16 - quorumSlots(16))!;
    const session = await escrow.open();
    for (let k = 0; k < 30; k++) {
      const s = await serve(session, chatCase(k, ' quorum'));
      expect(s.result).toMatchObject({ status: 'completed', confirmed: true, finished: true });
    }
    await devnet.devshardHosts.setFault(down, { mode: 'down' });
    try {
      const fin = await session.finalize({ backoffMs: 10 });
      const signed = fin.signatures.map((s) => s.slotId);
      const others = escrow.slots.flatMap((a, slot) => (a === down ? [] : [slot]));
      expect(signed).toEqual(others);
      expect(signed.length).toBeGreaterThanOrEqual(quorumSlots(16));
      escrow.expectHostsInSync(
        session,
        escrow.hosts.filter((a) => a !== down),
      );
      expect(escrow.hostSession(down).latestNonce).toBeLessThan(session.latestNonce);
      expect(escrow.eventsOf('host_error').every((e) => e.host === down)).toBe(true);

      // Settle in the escrow's next epoch (still allowed, §2.6 Settle 9): validators are paid to bank.
      devnet.epochs.advanceTo(escrow.row.epochIndex + 1n);
      const { paidTo } = await settleAndCheck(escrow, session, fin);
      expect(paidTo).toBe('bank');
    } finally {
      await devnet.devshardHosts.setFault(down, null);
    }
  }, 120_000);
});
