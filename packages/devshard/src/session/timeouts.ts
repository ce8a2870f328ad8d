// Timing out inferences (devshard-protocol.md §7.4): no receipt by refusal_timeout after started_at,
// or no Finish by execution_timeout after confirmed_at, plus a few seconds for clock skew. Then ask
// every other host (one per distinct address, never the executor) to verify, with the diffs it lacks
// and, for a refusal, the payload; once the verified accept weight exceeds vote_threshold, queue
// MsgTimeoutInference and send it in a diff, which returns the reservation to the balance (§5.4).

import type { PayloadWire } from '../json/wire.js';
import { diffToWire } from '../json/wire.js';
import { newMsg, txOf } from '../proto/tx-builders.js';
import { type SlotVote, TimeoutReason } from '../proto/tx-messages.js';
import { timeoutVoteBytes } from '../signing/votes.js';
import { txEnv } from '../state/apply-context.js';
import { dedupKeys } from '../state/candidates.js';
import { openRecordsOf } from '../state/live-records.js';
import { type InferenceRecord, InferenceStatus } from '../state/types.js';
import { verifyStyledSlotSignature } from '../state/vote-style.js';
import { catchUp, diffsFor } from './delivery.js';
import { noteNonService } from './dominant-hosts.js';
import { flushDiff } from './flush.js';
import type { PendingEntry } from './pending-queue.js';
import { intakeHostTxs } from './response.js';
import type { SessionContext, TimeoutOutcomeKind } from './session-context.js';

export type TimeoutKind = 'refused' | 'execution';

export interface TimeoutOutcome {
  readonly inferenceId: bigint;
  readonly reason: TimeoutKind;
  /**
   * `applied`: MsgTimeoutInference is in a persisted diff; `queued`: votes suffice but the diff could
   * not be composed yet; `insufficient_votes`: retried later; `no_payload`: a refusal cannot be proven
   * without the request payload (lost).
   */
  readonly outcome: TimeoutOutcomeKind;
  /** Slots of the accepting addresses whose votes verified. */
  readonly acceptWeight: number;
}

interface Candidate {
  readonly record: InferenceRecord;
  readonly reason: TimeoutKind;
}

/** Inferences whose deadline (plus skew) has passed and that no queued tx would settle. */
export function timeoutCandidates(
  ctx: Pick<SessionContext, 'replica' | 'pending' | 'settings' | 'timeoutRounds'>,
  now: bigint,
): Candidate[] {
  const { config } = ctx.replica.state;
  const skew = ctx.settings.timeoutSkewSeconds;
  const out: Candidate[] = [];
  // Only Pending and Started records can time out: nearly every live record is past Started, and
  // this pass runs every few seconds, so it reads only the chunks of the live map holding open
  // ones (openRecordsOf), not every live record.
  for (const record of openRecordsOf(ctx.replica.state.inferences)) {
    const status = record.status;
    const id = record.id;
    if (!ctx.timeoutRounds.mayVote(id, now) || ctx.pending.has(dedupKeys.timeout(id))) continue;
    if (
      status === InferenceStatus.Pending &&
      !ctx.pending.has(dedupKeys.confirm(id)) &&
      now >= record.startedAt + config.refusalTimeout + skew
    ) {
      out.push({ record, reason: 'refused' });
    } else if (
      status === InferenceStatus.Started &&
      !ctx.pending.has(dedupKeys.finish(id)) &&
      now >= record.confirmedAt + config.executionTimeout + skew
    ) {
      out.push({ record, reason: 'execution' });
    }
  }
  return out;
}

const reasonCode = (reason: TimeoutKind) =>
  reason === 'refused' ? TimeoutReason.Refused : TimeoutReason.Execution;

/** One voter: catch it up, ask, verify its signed vote for the slot it claims (cold or warm key). */
async function askVoter(
  ctx: SessionContext,
  voter: string,
  id: bigint,
  reason: TimeoutKind,
  payload: PayloadWire | undefined,
  signal: AbortSignal,
): Promise<SlotVote | undefined> {
  const target = ctx.resolveHost(voter);
  if (!target) return undefined;
  const latest = ctx.replica.log.latestNonce;
  if (latest - ctx.hosts.of(voter) > ctx.settings.catchUpChunk) {
    const caught = await catchUp(ctx, voter, latest);
    if (!caught.ok) return undefined;
  }
  let diffs: Awaited<ReturnType<typeof diffsFor>>;
  try {
    diffs = await diffsFor(ctx, ctx.hosts.of(voter) + 1n, latest);
  } catch (error) {
    ctx.emit({ type: 'store_error', operation: 'readDiffs', error: error as Error });
    return undefined;
  }
  let response: Awaited<ReturnType<typeof ctx.transport.verifyTimeout>>;
  try {
    response = await ctx.transport.verifyTimeout(
      target,
      ctx.escrowId,
      {
        inferenceId: id,
        reason,
        ...(payload ? { payload } : {}),
        ...(diffs.length > 0 ? { diffs: diffs.map((d) => diffToWire(d.diff)) } : {}),
      },
      { signal },
    );
  } catch (error) {
    if (!signal.aborted) {
      ctx.emit({
        type: 'host_error',
        host: voter,
        operation: 'verify-timeout',
        nonce: id,
        error: error as Error,
      });
    }
    return undefined;
  }
  // A 200 means the host applied the diffs it was sent (a failed apply is a 500).
  if (diffs.length > 0) ctx.hosts.advance(voter, diffs[diffs.length - 1]!.nonce);
  if (response.mempool) intakeHostTxs(ctx, voter, response.mempool);
  if (!response.accept || !response.signature) return undefined;
  if (ctx.replica.state.group.slots[response.voterSlot] !== voter) return undefined;
  const verified = verifyStyledSlotSignature(
    ctx.replica.state,
    response.voterSlot,
    (style) =>
      timeoutVoteBytes(
        { escrowId: ctx.escrowId, inferenceId: id, reason: reasonCode(reason), accept: true },
        style,
      ),
    response.signature,
    txEnv(ctx.replica.state.latestNonce + 1n, ctx.applyCtx),
  );
  if (!verified) return undefined;
  return newMsg.vote({ voterSlot: response.voterSlot, accept: true, signature: response.signature });
}

/** Collects votes until accept weight > vote_threshold (then stops asking) or every voter answered. */
async function collectVotes(
  ctx: SessionContext,
  candidate: Candidate,
): Promise<{ votes: SlotVote[]; weight: number; enough: boolean } | undefined> {
  const { record, reason } = candidate;
  const group = ctx.replica.state.group;
  const executor = group.slots[record.executorSlot]!;
  const payload = reason === 'refused' ? ctx.replica.log.payload(record.id) : undefined;
  if (reason === 'refused' && !payload) return undefined;
  const threshold = ctx.replica.state.config.voteThreshold;
  const controller = new AbortController();
  const votes: SlotVote[] = [];
  let weight = 0;
  const voters = [...group.slotsOf.keys()].filter((a) => a !== executor);
  await new Promise<void>((resolve) => {
    let remaining = voters.length;
    if (remaining === 0) resolve();
    for (const voter of voters) {
      ctx.verifyLimit
        .run(voter, () =>
          controller.signal.aborted
            ? Promise.resolve(undefined)
            : askVoter(ctx, voter, record.id, reason, payload, controller.signal),
        )
        .then((vote) => {
          if (!vote || weight > threshold) return;
          votes.push(vote);
          weight += group.slotCount.get(voter) ?? 0;
          if (weight > threshold) {
            controller.abort();
            resolve();
          }
        })
        .catch(() => undefined)
        .finally(() => {
          if (--remaining === 0) resolve();
        });
    }
  });
  votes.sort((a, b) => a.voterSlot - b.voterSlot);
  return { votes, weight, enough: weight > threshold };
}

/**
 * One pass over the live inferences. Runs the vote rounds concurrently, queues every timeout that
 * reached a majority and sends them in one diff.
 */
export async function checkTimeouts(ctx: SessionContext): Promise<TimeoutOutcome[]> {
  if (ctx.timeoutRounds.running || ctx.guard.fault || ctx.finalizing || ctx.draining) return [];
  return ctx.timeoutRounds.pass(async () => {
    const now = ctx.clock.nowSeconds();
    ctx.timeoutRounds.prune((id) => {
      const status = ctx.replica.state.inferences.get(id)?.status;
      return status === InferenceStatus.Pending || status === InferenceStatus.Started;
    });
    const candidates = timeoutCandidates(ctx, now);
    if (candidates.length === 0) return [];
    const rounds = await Promise.all(
      candidates.map(async (c) => ({ c, result: await collectVotes(ctx, c) })),
    );
    const outcomes: { c: Candidate; kind: TimeoutOutcomeKind; weight: number }[] = [];
    const queued: PendingEntry[] = [];
    for (const { c, result } of rounds) {
      if (!result) {
        outcomes.push({ c, kind: 'no_payload', weight: 0 });
        ctx.timeoutRounds.retryAt(c.record.id, now + ctx.settings.timeoutRetrySeconds);
      } else if (!result.enough) {
        outcomes.push({ c, kind: 'insufficient_votes', weight: result.weight });
        ctx.timeoutRounds.retryAt(c.record.id, now + ctx.settings.timeoutRetrySeconds);
      } else {
        const entry = ctx.pending.add(
          txOf.timeoutInference(
            newMsg.timeoutInference({
              inferenceId: c.record.id,
              reason: reasonCode(c.reason),
              votes: result.votes,
            }),
          ),
        );
        if (entry) queued.push(entry);
        outcomes.push({ c, kind: 'queued', weight: result.weight });
      }
    }
    if (outcomes.some((o) => o.kind === 'queued')) {
      ctx.writes.add(queued);
      await flushDiff(ctx, []);
    }
    return outcomes.map(({ c, kind, weight }) => {
      // A sealed record was TimedOut first (only terminal records seal while Active, §5.6).
      const live = ctx.replica.state.inferences.get(c.record.id);
      const timedOut = live
        ? live.status === InferenceStatus.TimedOut
        : !ctx.pending.has(dedupKeys.timeout(c.record.id));
      const outcome: TimeoutOutcomeKind = kind === 'queued' && timedOut ? 'applied' : kind;
      if (outcome === 'applied') ctx.timeoutRounds.forget(c.record.id);
      noteNonService(ctx, ctx.replica.state.group.slots[c.record.executorSlot]!, c.record.id); // a deadline missed
      ctx.emit({
        type: 'timeout',
        inferenceId: c.record.id,
        reason: c.reason,
        outcome,
        acceptWeight: weight,
      });
      return { inferenceId: c.record.id, reason: c.reason, outcome, acceptWeight: weight };
    });
  });
}
