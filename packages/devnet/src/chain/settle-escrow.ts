// MsgSettleDevshardEscrow (chain-and-network.md §2.6 "Settle" and "Payout split",
// devshard-protocol.md §8.4): allowlist, escrow lookup, proof check, epoch window, then the payout:
// fee_share = ⌊fees/S⌋ per listed slot (+1 for the first fees mod S entries), summed per validator;
// an excluded validator's share goes to the governance module; validators of the current epoch are
// credited to their epoch balance (the coins stay in the inference module until claimed), others are
// paid to their bank balance; amount − total_payout is refunded to the creator.
import type { MsgSettleDevshardEscrow } from '@gonka-gateway/chain';
import { moduleAddress, transfer } from './bank.js';
import { InferenceErrors } from './errors.js';
import { makeEvent, type TxEvent } from './events.js';
import type { ExecEnv } from './exec-env.js';
import { verifySettlement } from './settlement-verify.js';
import type { StateTx } from './stores.js';

export function executeSettleEscrow(state: StateTx, msg: MsgSettleDevshardEscrow, env: ExecEnv): TxEvent[] {
  const chain = env.chain;
  if (!chain.isAllowedEscrowCreator(env.params, msg.settler)) {
    throw InferenceErrors.notAllowedEscrowCreator(msg.settler);
  }
  const escrow = state.escrows.get(msg.escrowId);
  if (!escrow) throw InferenceErrors.escrowNotFound(`escrow ${msg.escrowId} not found`);
  verifySettlement(escrow, msg, env.params.devshardEscrow, (granter, grantee) =>
    chain.hasWarmKeyGrant(granter, grantee),
  );

  const current = env.epochIndex;
  if (current < escrow.epochIndex || current > escrow.epochIndex + 1n) {
    throw InferenceErrors.settlementEpoch(
      `devshard settlement only supports current or previous epoch: current epoch ${current}, escrow epoch ${escrow.epochIndex}`,
    );
  }

  const forfeit = new Map<string, boolean>();
  for (const address of new Set(escrow.slots)) {
    if (!chain.participant(address))
      throw InferenceErrors.participantNotFound(`participant ${address} not found`);
    forfeit.set(address, chain.faults.isExcluded(address));
  }
  // Every participant is in the devnet's active set, so "active in the current epoch" reduces to
  // "the escrow is from the current epoch".
  const creditEpochBalance = escrow.epochIndex === current;

  const slotCount = BigInt(escrow.slots.length);
  const feeShare = msg.fees / slotCount;
  let remainderFees = msg.fees % slotCount;
  const payouts = new Map<string, bigint>();
  for (const hs of msg.hostStats) {
    const address = escrow.slots[hs.slotId]!;
    let payout = (payouts.get(address) ?? 0n) + hs.cost + feeShare;
    if (remainderFees > 0n) {
      payout += 1n;
      remainderFees--;
    }
    payouts.set(address, payout);
  }
  if (remainderFees !== 0n) {
    throw InferenceErrors.invalidSettlement(`failed to allocate all remainder fees, ${remainderFees} left`);
  }
  const totalPayout = [...payouts.values()].reduce((sum, p) => sum + p, 0n);
  if (totalPayout > escrow.amount) {
    throw InferenceErrors.invalidSettlement(
      `total payout ${totalPayout} exceeds escrow amount ${escrow.amount}`,
    );
  }

  const module = moduleAddress('inference');
  const events: TxEvent[] = [];
  const governancePayout = [...payouts].filter(([a]) => forfeit.get(a)).reduce((sum, [, p]) => sum + p, 0n);
  if (governancePayout > 0n) {
    events.push(...transfer(state, chain.faults, module, moduleAddress('gov'), governancePayout, 'forfeit'));
  }
  const paid = new Set<string>();
  for (const address of escrow.slots) {
    const payout = payouts.get(address) ?? 0n;
    if (payout === 0n || paid.has(address)) continue;
    paid.add(address);
    if (forfeit.get(address)) continue;
    if (creditEpochBalance) {
      state.epochBalances.set(address, (state.epochBalances.get(address) ?? 0n) + payout);
    } else {
      events.push(...transfer(state, chain.faults, module, address, payout, 'failed to pay validator'));
    }
  }
  const remainder = escrow.amount - totalPayout;
  if (remainder > 0n) {
    events.push(
      ...transfer(state, chain.faults, module, escrow.creator, remainder, 'failed to refund creator'),
    );
  }

  state.escrows.set(escrow.id, { ...escrow, settled: true });
  events.push(
    makeEvent('devshard_escrow_settled', {
      escrow_id: escrow.id.toString(),
      state_root_and_protocol_version: msg.version,
      settler: msg.settler,
      total_payout: totalPayout.toString(),
      fees: msg.fees.toString(),
      remainder: remainder.toString(),
    }),
  );
  return events;
}
