import type { DevshardEscrow } from '@gonka-gateway/chain';
import type { EscrowRow } from './init.js';

/**
 * The session's escrow row from the chain's. Every config field the hosts freeze from the row must
 * come through (§5.2, §10 item 7): a missing seal setting would be defaulted here while hosts use
 * the row's value, and the roots would split at the first seal.
 */
export function escrowRowFromChain(e: DevshardEscrow): EscrowRow {
  return {
    escrowId: e.id,
    creator: e.creator,
    amount: e.amount,
    slots: e.slots,
    tokenPrice: e.tokenPrice,
    createDevshardFee: e.createDevshardFee,
    feePerNonce: e.feePerNonce,
    validationRate: e.validationRate,
    voteThresholdFactor: e.voteThresholdFactor,
    inferenceSealGraceNonces: e.inferenceSealGraceNonces,
    inferenceSealGraceSeconds: e.inferenceSealGraceSeconds,
    autoSealEveryNNonces: e.autoSealEveryNNonces,
  };
}
