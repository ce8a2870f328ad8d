// TimeoutInference (devshard-protocol.md §5.4): REFUSED needs Pending, EXECUTION needs Started; with
// accept weight > vote_threshold the record is TimedOut, the executor gets a miss and the whole
// reservation returns to the balance.
import { DevshardError, DevshardErrorCode } from '../../errors.js';
import { type MsgTimeoutInference, TimeoutReason } from '../../proto/tx-messages.js';
import { timeoutVoteBytes } from '../../signing/votes.js';
import type { TxEnv } from '../apply-context.js';
import { updateRecord } from '../record.js';
import { InferenceStatus, type WorkingState } from '../types.js';
import { liveRecord, withHostStats, withRecord } from './common.js';
import { requireMajority, tallyVotes } from './votes.js';

export function applyTimeoutInference(s: WorkingState, msg: MsgTimeoutInference, env: TxEnv): WorkingState {
  const rec = liveRecord(s, msg.inferenceId);
  const required =
    msg.reason === TimeoutReason.Refused
      ? InferenceStatus.Pending
      : msg.reason === TimeoutReason.Execution
        ? InferenceStatus.Started
        : undefined;
  if (required === undefined) {
    throw new DevshardError(DevshardErrorCode.InvalidTimeoutReason, `unknown reason ${msg.reason}`);
  }
  if (rec.status !== required) {
    throw new DevshardError(
      DevshardErrorCode.InvalidTimeoutReason,
      `reason ${msg.reason} requires status ${required}, got ${rec.status}`,
    );
  }
  const { state, acceptWeight } = tallyVotes(
    s,
    msg.votes,
    (vote, style) =>
      timeoutVoteBytes(
        { escrowId: s.escrowId, inferenceId: msg.inferenceId, reason: msg.reason, accept: vote.accept },
        style,
      ),
    env,
  );
  requireMajority(s, acceptWeight);
  const next = withRecord(
    { ...state, balance: state.balance + rec.reservedCost },
    updateRecord(rec, { status: InferenceStatus.TimedOut }),
  );
  return withHostStats(next, rec.executorSlot, (h) => ({ missed: h.missed + 1 }));
}
