// Settling a finalize document on the devnet chain (MsgSettleDevshardEscrow, devshard-protocol.md
// §8.3–§8.4, chain-and-network.md §2.6) and checking every balance it moves, to the last ngonka,
// against the ledger recomputed from the stored diffs.
import { findEscrowSettledEvents, queryEscrow, type TxIncluded } from '@gonka-gateway/chain';
import {
  type FinalizeResult,
  parseFinalizeDocument,
  recoverStateSigner,
  settlementMessage,
} from '@gonka-gateway/devshard';
import type { UserSession } from '@gonka-gateway/devshard/session';
import { expect } from 'vitest';
import { broadcastIncluded } from './chain-tx.js';
import { quorumSlots, type TestEscrow } from './harness.js';
import { type Ledger, ledgerOf } from './ledger.js';

/**
 * The ledger of everything the escrow's store holds: every diff from nonce 1 (load() returns only the
 * diffs after the newest snapshot, saved every 500 diffs).
 */
export async function ledgerFromStore(escrow: TestEscrow): Promise<Ledger> {
  const id = escrow.id.toString();
  const stored = await escrow.store.load(id);
  if (!stored) throw new Error(`no stored session ${escrow.id}`);
  return ledgerOf(escrow.row, await escrow.store.readDiffs(id, 1n, stored.lastNonce));
}

/**
 * The finalize document agrees with the ledger: fees = create fee + fee_per_nonce × (diffs before the
 * FinalizeRound diff), final nonce F + N, host stats of every slot in slot order with the ledger's
 * cost and missed, and only slot signatures that recover to that slot's validator at the final root.
 */
export function expectDocumentMatches(escrow: TestEscrow, fin: FinalizeResult, ledger: Ledger): void {
  const n = escrow.slots.length;
  const { document, payload } = fin;
  expect(ledger.finalizeNonce).toBeGreaterThan(0n);
  expect(ledger.payingNonces).toBe(ledger.finalizeNonce - 1n);
  expect(document.fees).toBe(escrow.row.createDevshardFee + escrow.row.feePerNonce * ledger.payingNonces);
  expect(document.fees).toBe(ledger.fees);
  expect(document.nonce).toBe(ledger.finalizeNonce + BigInt(n));
  expect(document.nonce).toBe(ledger.latestNonce);
  expect(document.escrow_id).toBe(escrow.id.toString());
  expect(document.version).toBe(escrow.record.tag);
  expect(document.host_stats).toEqual(
    escrow.slots.map((_, slot) => ({
      slot_id: slot,
      missed: ledger.missed[slot],
      invalid: ledger.invalid[slot],
      cost: ledger.cost[slot],
      required_validations: undefined,
      completed_validations: undefined,
    })),
  );
  // The stored JSON is the same document (exact integers, its root the §6 formula of its fields).
  expect(parseFinalizeDocument(fin.json).document).toEqual(document);
  const slots = fin.signatures.map((s) => s.slotId);
  expect(new Set(slots).size).toBe(slots.length);
  expect(slots.length).toBeGreaterThanOrEqual(quorumSlots(n));
  for (const { slotId, signature } of fin.signatures) {
    const signer = recoverStateSigner(payload.stateRoot, escrow.id.toString(), payload.nonce, signature);
    expect(signer).toBe(escrow.slots[slotId]);
  }
}

export interface Settlement {
  readonly outcome: TxIncluded;
  /** Where the validators were paid: epoch balance (escrow of the current epoch) or bank. */
  readonly paidTo: 'epoch' | 'bank';
}

/**
 * Settles `fin` with creator-0's signed MsgSettleDevshardEscrow and checks every balance: the creator
 * is refunded the final session balance (the tx fee aside), each validator receives Σ cost of its
 * slots + its fee share (⌊fees/S⌋, +1 for the first fees mod S host-stats entries, §2.6 payout split)
 * in its epoch balance when the escrow is from the current epoch, else in its bank balance.
 */
export async function settleAndCheck(
  escrow: TestEscrow,
  session: UserSession,
  fin: FinalizeResult,
): Promise<Settlement> {
  const { devnet, client, signer, params, creator } = escrow.gateway;
  const chain = devnet.chain;
  const ledger = await ledgerFromStore(escrow);
  expectDocumentMatches(escrow, fin, ledger);
  expect(session.balance).toBe(ledger.balance);
  expect(session.state.fees).toBe(ledger.fees);

  const n = BigInt(escrow.slots.length);
  const fees = fin.document.fees;
  const share = fees / n;
  const remainder = Number(fees % n);
  const expectedPayout = new Map<string, bigint>(escrow.hosts.map((a) => [a, 0n]));
  fin.document.host_stats.forEach((h, index) => {
    const address = escrow.slots[h.slot_id]!;
    const extra = index < remainder ? 1n : 0n;
    expectedPayout.set(address, expectedPayout.get(address)! + h.cost + share + extra);
  });
  const totalPayout = [...expectedPayout.values()].reduce((a, b) => a + b, 0n);
  expect(totalPayout).toBe(escrow.row.amount - ledger.balance);

  const inferenceModule = chain.moduleAddress('inference');
  const before = {
    creator: chain.balanceOf(creator.address),
    module: chain.balanceOf(inferenceModule),
    bank: new Map(escrow.hosts.map((a) => [a, chain.balanceOf(a)])),
    epoch: new Map(escrow.hosts.map((a) => [a, chain.epochBalanceOf(a)])),
  };
  const epochBefore = chain.epoch();
  const { settler: _settler, ...message } = settlementMessage(fin.payload, fin.signatures, creator.address);
  const tx = signer.prepareSettleEscrow(message, params.fee);
  const outcome = await broadcastIncluded(client, tx);
  const epochAfter = chain.epoch();
  expect(epochAfter).toBe(epochBefore); // an epoch switch in between would blur where payouts go

  const [event] = findEscrowSettledEvents(outcome.events);
  expect(event).toMatchObject({
    escrowId: escrow.id,
    settler: creator.address,
    totalPayout,
    fees,
    remainder: ledger.balance,
  });
  const queried = await queryEscrow(client, escrow.id);
  expect(queried.escrow?.settled).toBe(true);

  // Settlement is fee-exempt, so the creator's refund is the final session balance, to the last ngonka.
  expect(tx.fee.amount).toBe(0n);
  expect(chain.balanceOf(creator.address) - before.creator).toBe(ledger.balance);
  const paidTo = escrow.row.epochIndex === epochAfter ? 'epoch' : 'bank';
  for (const address of escrow.hosts) {
    const paid = expectedPayout.get(address)!;
    const bankDelta = chain.balanceOf(address) - before.bank.get(address)!;
    const epochDelta = chain.epochBalanceOf(address) - before.epoch.get(address)!;
    expect({ host: escrow.nameOf(address), bankDelta, epochDelta }).toEqual({
      host: escrow.nameOf(address),
      bankDelta: paidTo === 'bank' ? paid : 0n,
      epochDelta: paidTo === 'epoch' ? paid : 0n,
    });
  }
  // Epoch-balance credits stay in the inference module; bank payouts leave it.
  const moduleDelta = chain.balanceOf(inferenceModule) - before.module;
  expect(moduleDelta).toBe(paidTo === 'epoch' ? -ledger.balance : -escrow.row.amount);
  return { outcome, paidTo };
}
