// Who may sign for a slot (devshard-protocol.md §5.7): its cold address, or its warm key. The first
// accepted warm key is bound into state (hashed into the root) and sticky for the session; the diff
// user signature never goes through here.
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
  const bound = s.warmKeys.get(slot);
  if (bound !== undefined) return bound === signer ? s : null;
  if (!env.isWarmKey(cold, signer)) return null;
  return { ...s, warmKeys: new Map(s.warmKeys).set(slot, signer) };
}
