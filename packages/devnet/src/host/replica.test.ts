import { recoverExecutorReceiptSigner, recoverStateSigner } from '@gonka-gateway/devshard';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet } from '../devnet.js';
import { type JsonBody, startTestDevnet } from '../testing/test-devnet.js';
import { receiptOf, TestUser } from '../testing/test-user.js';

async function signaturesAt(user: TestUser, address: string, nonce: bigint): Promise<Map<number, Buffer>> {
  const body = (await (await fetch(`${user.url(address, 'signatures')}?nonce=${nonce}`)).json()) as JsonBody;
  return new Map(
    Object.entries(body.signatures as Record<string, string>).map(([k, v]) => [
      Number(k),
      Buffer.from(v, 'base64'),
    ]),
  );
}

// Catch-up, per-nonce signatures (cold and warm keys), and host restarts.
describe('devshard host replicas', () => {
  let devnet: Devnet;
  let user: TestUser;

  beforeAll(async () => {
    devnet = await startTestDevnet({ devshardHosts: { warmKeySigners: ['host-1'] } });
    user = await TestUser.open(devnet);
  });
  afterAll(() => devnet.close());

  it('catches up a host that missed diffs, skipping what it already has', async () => {
    for (let i = 0; i < 4; i++) await user.infer(`catch-up ${i}`);
    await user.tick();
    const lagging = user.hostAddresses.find((a) => (user.hostSync.get(a) ?? 0n) < user.state.latestNonce)!;
    const had = user.hostSync.get(lagging) ?? 0n;
    // Resending diffs the host already holds is harmless: they are skipped.
    const answer = await user.chat(lagging, { diffs: user.diffs });
    expect(answer.status).toBe(200);
    const receipt = receiptOf(answer)!;
    expect(receipt.nonce).toBe(user.state.latestNonce);
    expect(receipt.stateHash).toEqual(user.state.root);
    expect(devnet.devshardHosts.session(lagging, user.row.id)!.latestNonce).toBe(user.state.latestNonce);
    expect(had).toBeLessThan(user.state.latestNonce);
    // A chunk that leaves a hole is refused (500): the host stays where it was.
    const next = user.compose();
    const after = user.compose();
    const hole = await user.chat(lagging, { diffs: [after] });
    expect(hole.status).toBe(500);
    expect(devnet.devshardHosts.session(lagging, user.row.id)!.latestNonce).toBe(next.nonce - 1n);
    expect((await user.chat(lagging, { diffs: [next, after] })).status).toBe(200);
  });

  it('returns state signatures at any nonce the host reached, for each of its slots', async () => {
    for (const address of user.hostAddresses) await user.chat(address);
    const final = user.state.latestNonce;
    for (const address of user.hostAddresses) {
      const session = devnet.devshardHosts.session(address, user.row.id)!;
      const participant = devnet.participants.find((p) => p.address === address)!;
      const signer = participant.name === 'host-1' ? participant.warmKey.address : address;
      for (const nonce of [2n, final]) {
        const sigs = await signaturesAt(user, address, nonce);
        expect([...sigs.keys()]).toEqual(session.slots);
        for (const sig of sigs.values()) {
          expect(recoverStateSigner(session.rootAt(nonce)!, user.id, nonce, sig)).toBe(signer);
        }
      }
      expect((await signaturesAt(user, address, final + 1n)).size).toBe(0);
    }
    // The warm signer holds the chain's grant, as settlement requires (§8.4).
    const host1 = devnet.participants.find((p) => p.name === 'host-1')!;
    expect(devnet.core.chain.hasWarmKeyGrant(host1.address, host1.warmKey.address)).toBe(true);
  });

  it('binds a warm executor key into the state the same way on every host', async () => {
    const host1 = devnet.participants.find((p) => p.name === 'host-1')!;
    const slot = user.slots.indexOf(host1.address);
    if (slot < 0) return; // host-1 drew no slot in this escrow
    // Advance to a nonce host-1 executes.
    while (user.executorOf(user.state.latestNonce + 1n) !== host1.address) await user.tick();
    const { diff, answer } = await user.infer('warm executor');
    const receipt = receiptOf(answer)!;
    const rec = user.state.inferences.get(diff.nonce)!;
    const signer = recoverExecutorReceiptSigner(
      {
        inferenceId: diff.nonce,
        promptHash: rec.promptHash,
        model: rec.model,
        inputLength: rec.inputLength,
        maxTokens: rec.maxTokens,
        startedAt: rec.startedAt,
        escrowId: user.id,
        confirmedAt: receipt.confirmedAt!,
      },
      receipt.receipt!,
    );
    expect(signer).toBe(host1.warmKey.address);
    await user.tick(); // the Confirm binds warm_keys[slot] (§5.7)
    expect(user.state.warmKeys.get(Number(diff.nonce % 16n))).toBe(host1.warmKey.address);
    for (const address of user.hostAddresses) {
      const answer = await user.chat(address);
      expect(receiptOf(answer)!.stateHash).toEqual(user.state.root);
    }
  });

  it('keeps every session across a host restart', async () => {
    const address = user.executorOf(user.state.latestNonce + 1n);
    const participant = devnet.participants.find((p) => p.address === address)!;
    await user.chat(address);
    const session = devnet.devshardHosts.session(address, user.row.id)!;
    const nonce = session.latestNonce;
    const sigsBefore = await signaturesAt(user, address, nonce);
    await participant.stop();
    await expect(fetch(`${user.url(address, 'mempool')}`)).rejects.toThrow();
    await participant.start();
    expect(devnet.devshardHosts.session(address, user.row.id)).toBe(session);
    expect(await signaturesAt(user, address, nonce)).toEqual(sigsBefore);
    const { answer } = await user.infer('after the restart');
    expect(receiptOf(answer)!.receipt).toHaveLength(65);
    expect(receiptOf(answer)!.stateHash).toEqual(user.state.root);
    expect(answer.done).toBe(true);
  });
});
