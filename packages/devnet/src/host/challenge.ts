// challenge-receipt (devshard-protocol.md §4.2, §4.3, §7.4): a verifier asks the executor for a
// receipt before voting a refusal timeout, and for its mempool before voting an execution timeout.
// The executor answers a receipt only when it would have executed (record Pending, it owns the slot,
// the payload matches the applied start) and then executes in the background, so its Finish lands in
// its mempool. The client side calls the executor host over HTTP, signed with the verifier's cold key
// (a group member), or answers locally when the verifier is the executor itself.
import { InferenceStatus, signRequest } from '@gonka-gateway/devshard';
import type { MockModel } from '../model/mock-model.js';
import { decideReceipt, execute } from './executor.js';
import type { HostSession } from './session.js';
import type { HostStore } from './session-store.js';
import {
  type ChallengeAnswer,
  type ChallengeBody,
  decodeChallengeAnswer,
  encodeChallengeBody,
} from './wire.js';

export interface ChallengeDeps {
  readonly store: HostStore;
  readonly model: MockModel;
  readonly nowSeconds: () => bigint;
  readonly maxNonce: bigint;
  /** Consumes a use of the host's `refuse` fault; true = refuse. */
  readonly refuseFault: () => boolean;
}

/** The executor's side; `error` means the delivered diffs were not accepted (HTTP 500). */
export function answerChallenge(
  session: HostSession,
  body: ChallengeBody,
  deps: ChallengeDeps,
): ChallengeAnswer | { readonly error: Error } {
  const delivery = session.deliver(body.diffs, deps.store.applyContext, deps.maxNonce);
  if (delivery.error) return { error: delivery.error };
  const id = body.inferenceId;
  const recovery = () => session.mempool.forInference(id).map((t) => t.bytes);
  const rec = session.state.inferences.get(id);
  if (!rec || rec.status !== InferenceStatus.Pending || !session.isExecutorOf(id) || !body.payload)
    return { mempool: recovery() };
  const decision = decideReceipt(
    session,
    deps.store,
    id,
    body.payload,
    false,
    deps.nowSeconds(),
    deps.refuseFault,
  );
  if ('refused' in decision) return { mempool: recovery() };
  if (!session.executions.has(id)) {
    // Fire and forget: the Finish joins the mempool when the model is done.
    void execute(session, deps.store, deps.model, decision, {});
  }
  return { receipt: decision.receipt, confirmedAt: decision.confirmedAt, mempool: recovery() };
}

export type ChallengeOutcome =
  | { readonly reachable: true; readonly answer: ChallengeAnswer }
  /** Down, refusing connections, an error status, a timeout: the verifier treats it as no receipt. */
  | { readonly reachable: false };

const CHALLENGE_TIMEOUT_MS = 10_000;

/** Challenges the executor host of an inference on behalf of `verifier`. */
export async function challengeExecutor(
  verifier: HostStore,
  executor: { readonly address: string; readonly inferenceUrl: string },
  session: HostSession,
  body: ChallengeBody,
  local: (body: ChallengeBody) => ChallengeAnswer | { readonly error: Error },
  nowSeconds: bigint,
): Promise<ChallengeOutcome> {
  if (executor.address === verifier.host.address) {
    const answer = local(body);
    return 'error' in answer ? { reachable: false } : { reachable: true, answer };
  }
  const text = encodeChallengeBody(body);
  const bytes = new TextEncoder().encode(text);
  try {
    const res = await fetch(
      `${executor.inferenceUrl}/devshard/${session.version}/sessions/${session.id}/challenge-receipt`,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-devshard-signature': signRequest(verifier.host.key, session.id, bytes, nowSeconds),
          'x-devshard-timestamp': nowSeconds.toString(),
        },
        body: bytes,
        signal: AbortSignal.timeout(CHALLENGE_TIMEOUT_MS),
      },
    );
    if (res.status !== 200) {
      await res.body?.cancel();
      return { reachable: false };
    }
    return { reachable: true, answer: decodeChallengeAnswer(await res.text()) };
  } catch {
    return { reachable: false };
  }
}
