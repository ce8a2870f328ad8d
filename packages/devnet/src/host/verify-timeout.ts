// POST verify-timeout (devshard-protocol.md §4.3 shapes, §7.4 rules as a voting host applies them):
// after the catch-up diffs, a host votes
//  - refused: the record is Pending, refusal_timeout has passed since started_at, the host knows no
//    Confirm/Finish for it, the payload matches the record, and the executor, challenged once with
//    the payload, gives no receipt (unreachable counts as no receipt);
//  - execution: the record is Started, execution_timeout has passed since confirmed_at, and no Finish
//    is known locally or in the executor's mempool (asked with a payload-less challenge).
// An accepting vote is signed over TimeoutVoteContent{escrow_id, inference_id, reason, accept}; a
// rejection carries the recovery txs (Confirm/Finish of that inference) the host holds, copied from
// the executor when the challenge produced them, so the user can include them instead.
import {
  decodeTx,
  InferenceStatus,
  signPreimage,
  TimeoutReason,
  timeoutVoteBytes,
} from '@gonka-gateway/devshard';
import type { ChallengeOutcome } from './challenge.js';
import { payloadMismatch } from './executor.js';
import type { HostSession } from './session.js';
import type { HostStore } from './session-store.js';
import type { ChallengeAnswer, ChallengeBody, VerifyTimeoutAnswer, VerifyTimeoutBody } from './wire.js';

export interface VerifyDeps {
  readonly store: HostStore;
  readonly nowSeconds: () => bigint;
  readonly maxNonce: bigint;
  /** Challenges the executor of the inference (remote or local). */
  readonly challenge: (body: ChallengeBody) => Promise<ChallengeOutcome>;
}

/** Copies the executor's Confirm/Finish of inference `id` into this host's mempool (bytes unchanged). */
function ingest(session: HostSession, answer: ChallengeAnswer, id: bigint): boolean {
  let found = false;
  for (const bytes of answer.mempool) {
    let tx: ReturnType<typeof decodeTx>;
    try {
      tx = decodeTx(bytes);
    } catch {
      continue;
    }
    const t = tx.tx;
    if ((t.kind === 'confirmStart' || t.kind === 'finishInference') && t.msg.inferenceId === id) {
      session.mempool.add(tx);
      found = true;
    }
  }
  if (found) session.mempool.prune(session.state);
  return found;
}

function hasFinish(answer: ChallengeAnswer, id: bigint): boolean {
  return answer.mempool.some((bytes) => {
    try {
      const t = decodeTx(bytes).tx;
      return t.kind === 'finishInference' && t.msg.inferenceId === id;
    } catch {
      return false;
    }
  });
}

/**
 * Votes on a timeout after applying the catch-up diffs. A catch-up diff that does not apply is an
 * `error` (HTTP 500, as for chat): the reference host ignores it and votes on what it has, but a 200
 * tells the user the diffs were taken, so the devnet does not answer one then.
 */
export async function verifyTimeout(
  session: HostSession,
  body: VerifyTimeoutBody,
  deps: VerifyDeps,
): Promise<VerifyTimeoutAnswer | { readonly error: Error }> {
  const delivery = session.deliver(body.diffs, deps.store.applyContext, deps.maxNonce);
  if (delivery.error) return { error: delivery.error };
  const id = body.inferenceId;
  const voterSlot = session.primarySlot;
  const reject = (rejectCause: string): VerifyTimeoutAnswer => {
    const mempool = session.mempool.forInference(id).map((t) => t.bytes);
    return { accept: false, voterSlot, ...(mempool.length > 0 ? { mempool } : {}), rejectCause };
  };
  const rec = session.state.inferences.get(id);
  if (!rec) return reject('inference not found');
  const config = session.state.config;
  const now = deps.nowSeconds();
  let reason: number;
  if (body.reason === 'refused') {
    reason = TimeoutReason.Refused;
    if (rec.status !== InferenceStatus.Pending) return reject('inference is not pending');
    if (now - rec.startedAt < config.refusalTimeout) return reject('refusal deadline has not passed');
    if (session.mempool.has('confirmStart', id) || session.mempool.has('finishInference', id)) {
      return reject('executor receipt known');
    }
    if (!body.payload) return reject('no payload');
    const mismatch = payloadMismatch(rec, body.payload);
    if (mismatch) return reject(`payload: ${mismatch}`);
    const outcome = await deps.challenge({ inferenceId: id, payload: body.payload, diffs: [] });
    if (outcome.reachable && outcome.answer.receipt) {
      ingest(session, outcome.answer, id);
      return reject('executor gave a receipt');
    }
    // The session may have moved while the challenge was in flight.
    if (session.state.inferences.get(id)?.status !== InferenceStatus.Pending) {
      return reject('inference is not pending');
    }
  } else {
    reason = TimeoutReason.Execution;
    if (rec.status !== InferenceStatus.Started) return reject('inference is not started');
    if (now - rec.confirmedAt < config.executionTimeout) return reject('execution deadline has not passed');
    if (session.mempool.has('finishInference', id)) return reject('finish known');
    const outcome = await deps.challenge({ inferenceId: id, diffs: [] });
    if (outcome.reachable && hasFinish(outcome.answer, id)) {
      ingest(session, outcome.answer, id);
      return reject('executor has a finish');
    }
    if (session.state.inferences.get(id)?.status !== InferenceStatus.Started) {
      return reject('inference is not started');
    }
  }
  // v5 preimage: TimeoutVoteContent without a domain tag (§2.4, §11).
  const preimage = timeoutVoteBytes({ escrowId: session.id, inferenceId: id, reason, accept: true });
  const signature = deps.store.sign(preimage, (key) => signPreimage(key, preimage));
  return { accept: true, signature, voterSlot };
}
