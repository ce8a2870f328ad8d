// ErrorMiss (devshard-protocol.md §5.4): a Finished inference whose response was an error body.
// With accept weight > vote_threshold the record is TimedOut, the executor gets a miss, and Finish's
// payment is unwound: the balance regains actual_cost and the host's cost drops (floored at 0).
import { DevshardError, DevshardErrorCode } from '../../errors.js';
import type { MsgErrorMiss } from '../../proto/tx-messages.js';
import { errorMissVoteBytes } from '../../signing/votes.js';
import type { TxEnv } from '../apply-context.js';
import { updateRecord } from '../record.js';
import { InferenceStatus, type WorkingState } from '../types.js';
import { costWithout, liveRecord, withHostStats, withRecord } from './common.js';
import { requireMajority, tallyVotes } from './votes.js';

export function applyErrorMiss(s: WorkingState, msg: MsgErrorMiss, env: TxEnv): WorkingState {
  const rec = liveRecord(s, msg.inferenceId);
  if (rec.status !== InferenceStatus.Finished) {
    throw new DevshardError(
      DevshardErrorCode.InvalidTransition,
      `error-miss requires finished, got ${rec.status}`,
    );
  }
  const { state, acceptWeight } = tallyVotes(
    s,
    msg.votes,
    (vote, style) =>
      errorMissVoteBytes(
        {
          escrowId: s.escrowId,
          inferenceId: msg.inferenceId,
          accept: vote.accept,
          responseHash: rec.responseHash,
        },
        style,
      ),
    env,
  );
  requireMajority(s, acceptWeight);
  const next = withRecord(
    { ...state, balance: state.balance + rec.actualCost },
    updateRecord(rec, { status: InferenceStatus.TimedOut }),
  );
  return withHostStats(next, rec.executorSlot, (h) => ({
    missed: h.missed + 1,
    cost: costWithout(h.cost, rec.actualCost),
  }));
}
