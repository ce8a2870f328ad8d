// MsgCreateDevshardEscrow keeper rules, in the keeper's order (chain-and-network.md §2.6 "Create"):
// allowlist, model, amount range, per-epoch cap, epoch group weights, slot draw, lock funds, store the
// row with token_price, fees and timeouts frozen, emit devshard_escrow_created.
import type { MsgCreateDevshardEscrow } from '@gonka-gateway/chain';
import { moduleAddress, transfer } from './bank.js';
import { InferenceErrors } from './errors.js';
import { makeEvent, type TxEvent } from './events.js';
import type { ExecEnv } from './exec-env.js';
import { drawSlots } from './slot-draw.js';
import type { EscrowRow, StateTx } from './stores.js';

export function executeCreateEscrow(state: StateTx, msg: MsgCreateDevshardEscrow, env: ExecEnv): TxEvent[] {
  const ep = env.params.devshardEscrow;
  if (!env.chain.isAllowedEscrowCreator(env.params, msg.creator)) {
    throw InferenceErrors.notAllowedEscrowCreator(msg.creator);
  }
  if (msg.modelId === '') throw InferenceErrors.invalidEscrowRequest('model_id is required');
  if (msg.amount < ep.minAmount || msg.amount > ep.maxAmount) {
    throw InferenceErrors.invalidEscrowRequest(
      `escrow amount ${msg.amount} out of range [${ep.minAmount}, ${ep.maxAmount}]`,
    );
  }
  const epochCount = state.escrowsPerEpoch.get(env.epochIndex) ?? 0;
  if (BigInt(epochCount) >= ep.maxEscrowsPerEpoch || env.chain.faults.settings.epochCapReached) {
    throw InferenceErrors.epochEscrowLimit(
      `epoch ${env.epochIndex} already has ${env.chain.faults.settings.epochCapReached ? ep.maxEscrowsPerEpoch : epochCount} escrows (max ${ep.maxEscrowsPerEpoch})`,
    );
  }
  const weights = env.chain.epochGroupWeights(msg.modelId);
  if (weights.length === 0) {
    throw InferenceErrors.noValidationWeights(
      `no validation weights in epoch group for model ${JSON.stringify(msg.modelId)}`,
    );
  }

  const nextId = (state.meta.get('escrowCounter') ?? 0n) + 1n;
  const slots = drawSlots({
    appHashHex: env.appHashHex,
    seed: `devshard_escrow:${nextId}`,
    modelId: msg.modelId,
    weights,
    groupSize: ep.groupSize,
  });
  // Locking the amount after the fee was deducted in ante: spendable must cover amount + fee (rule 7).
  const lockEvents = transfer(
    state,
    env.chain.faults,
    msg.creator,
    moduleAddress('inference'),
    msg.amount,
    'failed to lock funds',
  );

  const row: EscrowRow = {
    id: nextId,
    creator: msg.creator,
    amount: msg.amount,
    slots,
    epochIndex: env.epochIndex,
    appHash: env.appHashHex,
    settled: false,
    tokenPrice: ep.tokenPrice,
    modelId: msg.modelId,
    createDevshardFee: ep.createDevshardFee,
    feePerNonce: ep.feePerNonce,
    validationRate: ep.validationRate,
    voteThresholdFactor: ep.voteThresholdFactor,
    inferenceSealGraceNonces: Number(ep.sealGraceNonces),
    inferenceSealGraceSeconds: Number(ep.sealGraceSeconds),
    autoSealEveryNNonces: Number(ep.autoSealEveryNNonces),
    maxNonce: Number(ep.maxNonce),
    refusalTimeout: ep.refusalTimeout,
    executionTimeout: ep.executionTimeout,
  };
  state.escrows.set(nextId, row);
  state.meta.set('escrowCounter', nextId);
  state.escrowsPerEpoch.set(env.epochIndex, epochCount + 1);

  return [
    ...lockEvents,
    makeEvent('devshard_escrow_created', {
      escrow_id: nextId.toString(),
      creator: msg.creator,
      amount: msg.amount.toString(),
      epoch_index: env.epochIndex.toString(),
      model_id: msg.modelId,
    }),
  ];
}
