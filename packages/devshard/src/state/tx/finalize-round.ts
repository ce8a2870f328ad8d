// FinalizeRound (devshard-protocol.md §5.4, §5.5): Active → Finalizing; this diff and all later ones
// pay no fee. RevealSeed is deprecated and accepted without effect.

import { DevshardError, DevshardErrorCode } from '../../errors.js';
import { SessionPhase } from '../../hash/root-formula.js';
import type { WorkingState } from '../types.js';

export function applyFinalizeRound(s: WorkingState): WorkingState {
  if (s.phase !== SessionPhase.Active) throw new DevshardError(DevshardErrorCode.AlreadyFinalizing);
  return { ...s, phase: SessionPhase.Finalizing };
}

export function applyRevealSeed(s: WorkingState): WorkingState {
  return s;
}
