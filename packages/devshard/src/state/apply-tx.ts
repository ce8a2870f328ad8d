// Dispatches one transaction to its rule (devshard-protocol.md §5.4). A oneof member the session's
// profile does not know is an empty tx to hosts of that line, so it is refused the same way.
import { DevshardError, DevshardErrorCode } from '../errors.js';
import type { DevshardTx } from '../proto/devshard-tx.js';
import type { TxEnv } from './apply-context.js';
import { applyConfirmStart } from './tx/confirm-start.js';
import { applyErrorMiss } from './tx/error-miss.js';
import { applyFinalizeRound, applyRevealSeed } from './tx/finalize-round.js';
import { applyFinishInference } from './tx/finish-inference.js';
import { applyForceHeightSyncTurn, applyHeartbeatOrAck } from './tx/height-sync.js';
import { applyStartInference } from './tx/start-inference.js';
import { applyTimeoutInference } from './tx/timeout-inference.js';
import { applyValidation } from './tx/validation.js';
import { applyValidationVote } from './tx/validation-vote.js';
import type { WorkingState } from './types.js';

/** Returns the state after `tx`; throws DevshardError and leaves `s` untouched when it fails. */
export function applyTx(s: WorkingState, tx: DevshardTx, env: TxEnv): WorkingState {
  if (tx.kind === 'none' || !s.profile.txKinds.has(tx.kind)) {
    throw new DevshardError(DevshardErrorCode.EmptyTx, 'devshard tx has no message set');
  }
  switch (tx.kind) {
    case 'startInference':
      return applyStartInference(s, tx.msg, env);
    case 'confirmStart':
      return applyConfirmStart(s, tx.msg, env);
    case 'finishInference':
      return applyFinishInference(s, tx.msg, env);
    case 'timeoutInference':
      return applyTimeoutInference(s, tx.msg, env);
    case 'errorMiss':
      return applyErrorMiss(s, tx.msg, env);
    case 'validation':
      return applyValidation(s, tx.msg, env);
    case 'validationVote':
      return applyValidationVote(s, tx.msg, env);
    case 'revealSeed':
      return applyRevealSeed(s);
    case 'finalizeRound':
      return applyFinalizeRound(s);
    case 'forceHeightSyncTurn':
      return applyForceHeightSyncTurn(s, tx.msg, env);
    case 'heartbeat':
    case 'heightAck':
      return applyHeartbeatOrAck(s);
  }
}
