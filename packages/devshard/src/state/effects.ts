// What applying a diff produced besides the new state: the root to check or sign, the warm-key
// bindings to persist with the diff (so replay does not ask the chain, §5.7), the records sealed.
import type { SessionPhase } from '../hash/root-formula.js';
import type { SealedRecord } from './seal.js';
import type { SessionState, WorkingState } from './types.js';

export interface WarmKeyBinding {
  readonly slot: number;
  readonly coldAddress: string;
  readonly address: string;
}

export interface DiffEffects {
  readonly nonce: bigint;
  readonly root: Uint8Array;
  readonly phase: SessionPhase;
  readonly warmKeysBound: readonly WarmKeyBinding[];
  readonly sealed: readonly SealedRecord[];
}

export interface ApplyResult {
  readonly state: SessionState;
  readonly effects: DiffEffects;
}

export function newWarmKeys(before: WorkingState, after: WorkingState): WarmKeyBinding[] {
  if (before.warmKeys === after.warmKeys) return [];
  const out: WarmKeyBinding[] = [];
  for (const [slot, address] of after.warmKeys) {
    if (!before.warmKeys.has(slot)) out.push({ slot, coldAddress: after.group.slots[slot]!, address });
  }
  return out.sort((a, b) => a.slot - b.slot);
}
