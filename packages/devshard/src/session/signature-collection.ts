// Signature collection at the final nonce (devshard-protocol.md §8.2): for each host address still
// missing, GET signatures?nonce=final, else send it the diffs it lacks (chunked) until it answers with
// a state_sig there. Rounds repeat with exponential backoff capped at 30 s until ⌊2S/3⌋+1 SLOTS have
// a verified signature; a multi-slot host's one signature counts for each of its slots.

import { hasSettlementQuorum, slotSignatures } from '../settlement/quorum.js';
import { catchUp } from './delivery.js';
import { SessionError, SessionErrorCode } from './errors.js';
import { storeStateSignature } from './response.js';
import type { SessionContext } from './session-context.js';

export interface SignatureCollectionOptions {
  /** Rounds before giving up with `no_quorum` (the caller retries later; default 8). */
  readonly maxRounds?: number;
  /** First backoff (default 1 s), doubled each round. */
  readonly backoffMs?: number;
  /** Backoff cap (§8.2: 30 s). */
  readonly maxBackoffMs?: number;
  readonly signal?: AbortSignal;
}

async function collectFrom(
  ctx: SessionContext,
  address: string,
  final: bigint,
  root: Uint8Array,
): Promise<void> {
  const target = ctx.resolveHost(address);
  if (!target) return;
  const slots = ctx.replica.state.group.slots;
  try {
    const sigs = await ctx.transport.getSignatures(target, ctx.escrowId, final);
    // Hosts may return signatures gossiped from peers too: every verified one counts.
    for (const [slot, sig] of sigs) {
      const owner = slots[slot];
      if (owner !== undefined && !ctx.settlement.hasSignature(owner))
        storeStateSignature(ctx, owner, root, final, sig);
    }
  } catch (error) {
    ctx.emit({
      type: 'host_error',
      host: address,
      operation: 'signatures',
      nonce: final,
      error: error as Error,
    });
  }
  if (ctx.settlement.hasSignature(address)) return;
  // The receipt of a send at the final nonce carries the host's state_sig (§7.2 step 2).
  await catchUp(ctx, address, final, { resend: true });
}

export async function collectSettlementSignatures(
  ctx: SessionContext,
  options: SignatureCollectionOptions = {},
): Promise<void> {
  const state = ctx.replica.state;
  const final = state.latestNonce;
  const root = state.root;
  for (const [slot, sig] of await ctx.store.loadSignatures(ctx.escrowId, final)) {
    const owner = state.group.slots[slot];
    if (owner !== undefined && !ctx.settlement.hasSignature(owner))
      storeStateSignature(ctx, owner, root, final, sig);
  }
  const hasQuorum = () => hasSettlementQuorum(state, slotSignatures(state, ctx.settlement.signatures));
  const maxRounds = options.maxRounds ?? 8;
  const base = options.backoffMs ?? 1_000;
  const cap = options.maxBackoffMs ?? 30_000;
  for (let round = 0; !hasQuorum(); round++) {
    const missing = [...state.group.slotsOf.keys()].filter((a) => !ctx.settlement.hasSignature(a));
    await Promise.all(missing.map((a) => collectFrom(ctx, a, final, root)));
    if (hasQuorum()) break;
    if (round + 1 >= maxRounds) {
      const have = slotSignatures(state, ctx.settlement.signatures).length;
      throw new SessionError(
        SessionErrorCode.NoQuorum,
        `${have} of ${state.group.slots.length} slots signed nonce ${final}`,
      );
    }
    await ctx.clock.sleep(Math.min(base * 2 ** round, cap), options.signal);
  }
}

/**
 * Brings every host still below the final nonce there (best effort, in parallel). §8.1 sends each host
 * only the rounds of its own slots and collection stops at the slot quorum, so without this a host
 * whose last round came before F + N, and whose signature the quorum did not need (e.g. next to a host
 * holding 11 of 16 slots), stays Finalizing a few nonces behind. A failed send is reported by catchUp
 * (`host_error`) and changes nothing: the document does not depend on it.
 */
export async function deliverFinalToAll(ctx: SessionContext): Promise<void> {
  const final = ctx.replica.state.latestNonce;
  const behind = [...ctx.replica.state.group.slotsOf.keys()].filter((a) => ctx.hosts.of(a) < final);
  await Promise.all(behind.map((a) => catchUp(ctx, a, final)));
}
