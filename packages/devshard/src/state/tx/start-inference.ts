// StartInference (devshard-protocol.md §5.4): reserve (input_length + max_tokens) × token_price and
// create a Pending record executed by slot `id mod N`. The diff-level checks (one start per diff, id
// = nonce) are in state/diff-checks.ts.

import { DevshardError, DevshardErrorCode } from '../../errors.js';
import { SessionPhase } from '../../hash/root-formula.js';
import type { MsgStartInference } from '../../proto/tx-messages.js';
import type { TxEnv } from '../apply-context.js';
import { executorSlotFor } from '../group.js';
import { idLogAppend, idLogHas } from '../id-log.js';
import { makeRecord } from '../record.js';
import { InferenceStatus, type WorkingState } from '../types.js';
import { stamped, tokenCost, withRecord } from './common.js';

export function applyStartInference(s: WorkingState, msg: MsgStartInference, env: TxEnv): WorkingState {
  if (s.phase !== SessionPhase.Active) throw new DevshardError(DevshardErrorCode.SessionFinalizing);
  if (!env.replay && msg.maxTokens < s.config.maxTokensFloor) {
    throw new DevshardError(
      DevshardErrorCode.MaxTokensBelowFloor,
      `max_tokens ${msg.maxTokens}, floor ${s.config.maxTokensFloor}`,
    );
  }
  if (s.inferences.has(msg.inferenceId) || idLogHas(s.startedIds, msg.inferenceId)) {
    throw new DevshardError(DevshardErrorCode.DuplicateInferenceId, `inference ${msg.inferenceId}`);
  }
  const reserved = tokenCost(msg.inputLength, msg.maxTokens, s.config.tokenPrice);
  if (s.balance < reserved) {
    throw new DevshardError(
      DevshardErrorCode.InsufficientBalance,
      `reserve ${reserved}, balance ${s.balance}`,
    );
  }
  const record = makeRecord({
    id: msg.inferenceId,
    status: InferenceStatus.Pending,
    executorSlot: executorSlotFor(s.group, msg.inferenceId),
    model: msg.model,
    promptHash: msg.promptHash,
    responseHash: new Uint8Array(0),
    inputLength: msg.inputLength,
    maxTokens: msg.maxTokens,
    inputTokens: 0n,
    outputTokens: 0n,
    reservedCost: reserved,
    actualCost: 0n,
    startedAt: msg.startedAt,
    confirmedAt: 0n,
    votesValid: 0,
    votesInvalid: 0,
    validatedBy: 0n,
    startedAtHeight: stamped(s, msg.observedBlockHash) ? msg.observedHeight : 0n,
    confirmedAtHeight: 0n,
  });
  return {
    ...withRecord(s, record),
    balance: s.balance - reserved,
    startedIds: idLogAppend(s.startedIds, msg.inferenceId),
  };
}
