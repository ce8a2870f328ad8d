// FinishInference (devshard-protocol.md §5.4): Started → Finished. The executor is paid
// min(tokens × price, reserved) (v5 clamps; v4 rejects a cost above the reservation) and the
// surplus returns to the balance.
import { DevshardError, DevshardErrorCode } from '../../errors.js';
import type { MsgFinishInference } from '../../proto/tx-messages.js';
import { recoverFinishProposer } from '../../signing/proposer.js';
import type { TxEnv } from '../apply-context.js';
import { authorizeSlotSigner } from '../authorize.js';
import { updateRecord } from '../record.js';
import { InferenceStatus, type WorkingState } from '../types.js';
import { liveRecord, requireEscrowId, tokenCost, withHostStats, withRecord } from './common.js';

export function applyFinishInference(s: WorkingState, msg: MsgFinishInference, env: TxEnv): WorkingState {
  const rec = liveRecord(s, msg.inferenceId);
  if (rec.status !== InferenceStatus.Started) {
    throw new DevshardError(DevshardErrorCode.InvalidTransition, `expected started, got ${rec.status}`);
  }
  if (msg.executorSlot !== rec.executorSlot) {
    throw new DevshardError(
      DevshardErrorCode.WrongExecutorSlot,
      `expected ${rec.executorSlot}, got ${msg.executorSlot}`,
    );
  }
  const authorized = authorizeSlotSigner(s, msg.executorSlot, recoverFinishProposer(msg, env.recover), env);
  if (!authorized) throw new DevshardError(DevshardErrorCode.InvalidProposerSig, `slot ${msg.executorSlot}`);
  requireEscrowId(s, msg.escrowId);

  let actual = tokenCost(msg.inputTokens, msg.outputTokens, s.config.tokenPrice);
  if (actual > rec.reservedCost) {
    if (!s.profile.clampActualCost) {
      throw new DevshardError(DevshardErrorCode.ActualCostExceedsReserved, `${actual} > ${rec.reservedCost}`);
    }
    actual = rec.reservedCost;
  }
  const next = withRecord(
    { ...authorized, balance: authorized.balance + (rec.reservedCost - actual) },
    updateRecord(rec, {
      status: InferenceStatus.Finished,
      responseHash: msg.responseHash,
      inputTokens: msg.inputTokens,
      outputTokens: msg.outputTokens,
      actualCost: actual,
    }),
  );
  return withHostStats(next, rec.executorSlot, (h) => ({ cost: h.cost + actual }));
}
