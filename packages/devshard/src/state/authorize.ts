// Who may sign for a slot (devshard-protocol.md §5.7): its cold address, or its warm key. The first
// accepted warm key is bound into state (hashed into the root) and sticky for the session; the diff
// user signature never goes through here.
//
// The later, domain-tagged revision (§11) adds one step before the chain lookup: a slot with no
// binding of its own also accepts a warm key already bound on a sibling slot (another slot of the
// same validator), and binds nothing for it. The authz grant is per validator address, so the
// sibling binding already proves it; deciding from state alone keeps replicas from asking the chain.
// That step changes the root (the pinned v5 binds the slot after a lookup instead), so it applies
// only once the session's hosts proved they run that revision: the session's signed-preimage style
// is pinned `tagged` (§12 #6, vote-style.ts), the same evidence composer and hosts derive from the log.
import type { TxEnv } from './apply-context.js';
import type { WorkingState } from './types.js';

/** The state with any new binding when `signer` may act for `slot`; null when it may not. */
export function authorizeSlotSigner(
  s: WorkingState,
  slot: number,
  signer: string | null,
  env: TxEnv,
): WorkingState | null {
  if (signer === null) return null;
  const cold = s.group.slots[slot];
  if (cold === undefined) return null;
  if (signer === cold) return s;
  // A bound slot is exclusive: its cold key or that warm key, whatever a sibling or the chain says.
  const bound = s.warmKeys.get(slot);
  if (bound !== undefined) return bound === signer ? s : null;
  if (siblingWarmKeysApply(s) && boundOnSibling(s, cold, slot, signer)) return s;
  if (!env.isWarmKey(cold, signer)) return null;
  return { ...s, warmKeys: new Map(s.warmKeys).set(slot, signer) };
}

/** Whether the later revision's sibling-slot rule is in force for this session (see the header). */
export function siblingWarmKeysApply(s: Pick<WorkingState, 'voteSigStyle'>): boolean {
  return s.voteSigStyle === 'tagged';
}

/** `signer` is the warm key bound on another slot of validator `cold`. */
function boundOnSibling(s: WorkingState, cold: string, slot: number, signer: string): boolean {
  for (const sibling of s.group.slotsOf.get(cold) ?? []) {
    if (sibling !== slot && s.warmKeys.get(sibling) === signer) return true;
  }
  return false;
}
