import {
  buildSettlementPayload,
  hasSettlementQuorum,
  InferenceStatus,
  isHostStateSignature,
  SessionPhase,
  settlementMessage,
  slotSignatures,
  txOf,
} from '@gonka-gateway/devshard';
import { decodeSignaturesResponse } from '@gonka-gateway/devshard/session';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet } from '../devnet.js';
import { account, deliver, startTestDevnet, TxFactory } from '../testing/test-devnet.js';
import { receiptOf, TestUser } from '../testing/test-user.js';

// What hosts sign is what settles — a session finalized through the hosts (§8.1),
// their signatures collected (§8.2) and the settlement accepted by the devnet chain (§8.4).
describe('devshard hosts: finalize and settle', () => {
  let devnet: Devnet;
  let user: TestUser;

  beforeAll(async () => {
    // One host signs with its warm key: the chain accepts authz grantees (§8.4).
    devnet = await startTestDevnet({ devshardHosts: { warmKeySigners: ['host-2'] } });
    user = await TestUser.open(devnet);
  });
  afterAll(() => devnet.close());

  it('settles with a creator refund equal to the final session balance, to the ngonka', async () => {
    for (let i = 0; i < 5; i++) await user.infer(`settle question ${i}`, { stream: i % 2 === 1 });
    const n = BigInt(user.slots.length);

    // Round 0: pending txs + FinalizeRound (nonce F, fee-free); rounds 1…N−1; one more (F + N).
    const f = user.compose([txOf.finalizeRound()]).nonce;
    expect(user.state.phase).toBe(SessionPhase.Finalizing);
    // The last Confirm and Finish rode in round 0: every inference is charged its actual cost.
    expect([...user.state.inferences.values()].every((r) => r.status === InferenceStatus.Finished)).toBe(
      true,
    );
    expect(receiptOf(await user.chat(user.executorOf(f)))!.stateHash).toEqual(user.state.root);
    for (let round = 1n; round <= n; round++) {
      const diff = user.compose();
      expect(diff.nonce).toBe(f + round);
      const answer = await user.chat(user.executorOf(diff.nonce));
      expect(answer.status).toBe(200);
      expect(receiptOf(answer)!.stateHash).toEqual(user.state.root);
    }
    const final = user.state.latestNonce;
    expect(final).toBe(f + n);
    expect(user.state.phase).toBe(SessionPhase.Settlement);
    expect(user.state.inferences.size).toBe(0); // drained and sealed
    const payload = buildSettlementPayload(user.state);

    // Signatures at the final nonce from every host address (catch-up first where needed).
    const byAddress = new Map<string, Uint8Array>();
    for (const address of user.hostAddresses) {
      if ((user.hostSync.get(address) ?? 0n) < final) await user.chat(address);
      const res = await fetch(`${user.url(address, 'signatures')}?nonce=${final}`);
      const sigs = decodeSignaturesResponse(await res.text());
      const sig = sigs.values().next().value!;
      expect(isHostStateSignature(user.state, address, payload.stateRoot, final, sig, user.ctx)).toBe(true);
      byAddress.set(address, sig);
    }
    const signatures = slotSignatures(user.state, byAddress);
    expect(signatures).toHaveLength(16);
    expect(hasSettlementQuorum(user.state, signatures)).toBe(true);

    const creator = account(devnet, 'creator-0');
    const bankBefore = devnet.chain.balanceOf(creator.address);
    const epochBefore = new Map(user.hostAddresses.map((a) => [a, devnet.chain.epochBalanceOf(a)]));
    const tx = await deliver(
      devnet,
      new TxFactory(devnet).settle(creator.key, settlementMessage(payload, signatures, creator.address)),
    );
    expect(tx.code, tx.raw_log).toBe(0);
    expect(devnet.chain.escrow(user.row.id)!.settled).toBe(true);
    // Settlement is fee-exempt for an allowlisted settler: the whole difference is the refund.
    expect(devnet.chain.balanceOf(creator.address) - bankBefore).toBe(user.state.balance);
    expect(user.state.balance).toBe(
      user.row.amount - payload.fees - payload.hostStats.reduce((s, h) => s + h.cost, 0n),
    );
    // Each host was paid its slots' costs plus its share of the fees (§8.4 payout).
    let paid = 0n;
    for (const address of user.hostAddresses)
      paid += devnet.chain.epochBalanceOf(address) - epochBefore.get(address)!;
    expect(paid).toBe(user.row.amount - user.state.balance);
    expect(payload.hostStats.some((h) => h.cost > 0n)).toBe(true);
  });
});
