// The funding check of a new inference (devshard-protocol.md §7.1 step 2: the balance must cover
// the reservation (input_length + max_tokens) × token_price and every fee_per_nonce the inference
// takes), run before any nonce is signed. Its verdict tells the caller what to do next:
// `request_exceeds_escrow` — this request is too big for the escrow, a smaller one would fit, so
// another escrow may serve it and this one is not depleted; `insufficient_balance` — the balance
// cannot pay even the smallest inference (one fee and the reservation of max_tokens at the floor,
// §5.4), so the escrow is depleted.
//
// The balance that counts is the one the StartInference will see: the diff carries the queued host
// txs first (§7.1 step 3), so a Finish or a timeout waiting in the queue has returned its
// reservation by then (§5.4). A request right after a big one is not refused for money that the
// very diff would give back.

import { orderCandidates } from '../state/candidates.js';
import { composeDiff } from '../state/compose.js';
import type { SessionState } from '../state/types.js';
import { FundingError, SessionErrorCode } from './errors.js';
import { composeTip, offerable } from './pipeline.js';
import type { SessionContext } from './session-context.js';

/**
 * What the funding check reads: the tip (the state after the newest composed diff, durable or not:
 * pipeline.ts), the queue and how txs apply.
 */
type QueuedBalance = Pick<SessionContext, 'replica' | 'pending' | 'pipeline' | 'applyCtx'>;

/** The reservation of an inference (§7.1 step 2): (input_length + max_tokens) × token_price. */
export function reservationOf(state: SessionState, inputLength: bigint, maxTokens: bigint): bigint {
  return (inputLength + maxTokens) * state.config.tokenPrice;
}

/**
 * The balance once the queued host txs are applied, as the next diff applies them before anything
 * else (before its own fee). Composed on a copy, nothing signed; the current balance when the queue
 * is empty or does not compose.
 */
export function balanceAfterQueued(ctx: QueuedBalance): bigint {
  const state = composeTip(ctx);
  const offered = offerable(ctx);
  if (offered.length === 0) return state.balance;
  try {
    const queued = orderCandidates(
      offered.map((e) => e.tx),
      [],
    );
    const composed = composeDiff(state, queued, ctx.applyCtx, { withPostStateRoot: false });
    // Host txs only return money (§5.4); the dry diff's own fee is added back.
    return composed.state.balance + state.config.feePerNonce;
  } catch {
    return state.balance;
  }
}

/**
 * Throws a FundingError unless the balance covers `reserve` plus `nonces` × fee_per_nonce (the
 * inference's own diff, and any nonces burned fee-only before it). `ctx` lets the queued txs'
 * returns count (balanceAfterQueued), read only when the balance alone falls short.
 */
export function checkFunding(ctx: QueuedBalance, reserve: bigint, nonces: bigint): void {
  const state = composeTip(ctx);
  const fees = nonces * state.config.feePerNonce;
  const needed = reserve + fees;
  if (state.balance >= needed) return;
  const balance = balanceAfterQueued(ctx);
  if (balance >= needed) return;
  const smallest = state.config.feePerNonce + state.config.maxTokensFloor * state.config.tokenPrice;
  const available = balance > fees ? balance - fees : 0n;
  throw new FundingError(
    balance < smallest ? SessionErrorCode.InsufficientBalance : SessionErrorCode.RequestExceedsEscrow,
    needed,
    available,
    `balance ${balance} < reserve ${reserve} + fees ${fees}`,
  );
}
