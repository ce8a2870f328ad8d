// ConfirmStart (devshard-protocol.md §5.4): Pending → Started once the executor's receipt verifies.
// The receipt content is rebuilt from the record (prompt, model, sizes, started_at), the escrow id
// and the message (confirmed_at, v5 observed fields), so the gateway cannot alter what was signed.
import { DevshardError, DevshardErrorCode } from '../../errors.js';
import type { MsgConfirmStart } from '../../proto/tx-messages.js';
import { recoverExecutorReceiptSigner } from '../../signing/executor-receipt.js';
import type { TxEnv } from '../apply-context.js';
import { authorizeSlotSigner } from '../authorize.js';
import { updateRecord } from '../record.js';
import { type InferenceRecord, InferenceStatus, type WorkingState } from '../types.js';
import { liveRecord, stamped, withRecord } from './common.js';

/**
 * The executor's receipt on `msg`, checked against the record it confirms: the state with any warm
 * key the signer bound, or null when the signature is not the executor slot's. Shared by the
 * strict apply below and by the session's admission of host txs, so both judge alike.
 */
export function authorizeConfirmReceipt(
  s: WorkingState,
  rec: InferenceRecord,
  msg: MsgConfirmStart,
  env: TxEnv,
): WorkingState | null {
  const stamps = s.profile.heightStamps;
  const signer = recoverExecutorReceiptSigner(
    {
      inferenceId: msg.inferenceId,
      promptHash: rec.promptHash,
      model: rec.model,
      inputLength: rec.inputLength,
      maxTokens: rec.maxTokens,
      startedAt: rec.startedAt,
      escrowId: s.escrowId,
      confirmedAt: msg.confirmedAt,
      observedHeight: stamps ? msg.observedHeight : 0n,
      observedBlockHash: stamps ? msg.observedBlockHash : new Uint8Array(0),
    },
    msg.executorSig,
    env.recover,
  );
  return authorizeSlotSigner(s, rec.executorSlot, signer, env);
}

export function applyConfirmStart(s: WorkingState, msg: MsgConfirmStart, env: TxEnv): WorkingState {
  const rec = liveRecord(s, msg.inferenceId);
  if (rec.status !== InferenceStatus.Pending) {
    throw new DevshardError(DevshardErrorCode.InvalidTransition, `expected pending, got ${rec.status}`);
  }
  const authorized = authorizeConfirmReceipt(s, rec, msg, env);
  if (!authorized) {
    throw new DevshardError(DevshardErrorCode.InvalidExecutorSig, `executor slot ${rec.executorSlot}`);
  }
  return withRecord(
    authorized,
    updateRecord(rec, {
      status: InferenceStatus.Started,
      confirmedAt: msg.confirmedAt,
      ...(stamped(s, msg.observedBlockHash) ? { confirmedAtHeight: msg.observedHeight } : {}),
    }),
  );
}
