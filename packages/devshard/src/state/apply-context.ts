// What apply needs from outside, injected so the state machine stays pure and synchronous.
import { defaultRecover, type RecoverFn } from '../signing/primitive.js';

/** Does `signer` hold the warm-key grant of the slot's validator `coldAddress` (§5.7)? */
export type WarmKeyLookup = (coldAddress: string, signer: string) => boolean;

export interface ApplyContext {
  /**
   * Synchronous warm-key check, consulted only for a slot with no binding yet; the answer is bound
   * into state (and reported in the effects, to be persisted with the diff). Absent = no warm keys.
   */
  readonly isWarmKey?: WarmKeyLookup;
  /** Signature recovery; defaults to @gonka-gateway/chain's recoverAddress. */
  readonly recover?: RecoverFn;
  /**
   * Re-applying a diff this replica already accepted and persisted: relaxes the checks that only
   * guard the creation of new work (the max-tokens floor), as the reference does on replay.
   */
  readonly replay?: boolean;
}

/** Per-diff environment handed to every transaction rule. */
export interface TxEnv {
  readonly nonce: bigint;
  readonly isWarmKey: WarmKeyLookup;
  readonly recover: RecoverFn;
  readonly replay: boolean;
}

const noWarmKeys: WarmKeyLookup = () => false;

export function txEnv(nonce: bigint, ctx: ApplyContext): TxEnv {
  return {
    nonce,
    isWarmKey: ctx.isWarmKey ?? noWarmKeys,
    recover: ctx.recover ?? defaultRecover,
    replay: ctx.replay ?? false,
  };
}

/**
 * A lookup answering from bindings persisted with earlier diffs, so replay does not depend on the
 * chain (§5.7); `fallback` answers anything else.
 */
export function warmKeyLookupFromBindings(
  bindings: Iterable<{ readonly coldAddress: string; readonly address: string }>,
  fallback: WarmKeyLookup = noWarmKeys,
): WarmKeyLookup {
  const known = new Set<string>();
  for (const b of bindings) known.add(`${b.coldAddress}\n${b.address}`);
  return (cold, signer) => known.has(`${cold}\n${signer}`) || fallback(cold, signer);
}
