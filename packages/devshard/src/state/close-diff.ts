// Steps 6–9 of applying a diff (devshard-protocol.md §5.3), after its transactions: the per-nonce fee
// while Active, the nonce, expiry of height-sync flags, the Finalizing → Settlement deadline with its
// drain, and the auto-seal sweep.

import { DevshardError, DevshardErrorCode } from '../errors.js';
import { EMPTY_HEIGHT_SYNC } from '../hash/rest-hash.js';
import { SessionPhase } from '../hash/root-formula.js';
import type { DevshardTx } from '../proto/devshard-tx.js';
import { observeHeartbeats } from './log-plane.js';
import { autoSeal, drainLive, isAutoSealNonce, type SealedRecord } from './seal.js';
import type { WorkingState } from './types.js';

function clearExpiredHeightSync(s: WorkingState): WorkingState {
  let h = s.heightSync;
  if (h.forcedEnd !== 0n && s.latestNonce > h.forcedEnd) h = { ...h, forcedStart: 0n, forcedEnd: 0n };
  if (h.swallowUntil !== 0n && s.latestNonce > h.swallowUntil) {
    h = { ...EMPTY_HEIGHT_SYNC, forcedStart: h.forcedStart, forcedEnd: h.forcedEnd };
  }
  return h === s.heightSync ? s : { ...s, heightSync: h };
}

export function closeDiff(
  applied: WorkingState,
  nonce: bigint,
  txs: readonly DevshardTx[],
): { state: WorkingState; sealed: SealedRecord[] } {
  let s = { ...applied, heightSyncLog: observeHeartbeats(applied.heightSyncLog, nonce, txs) };
  // 6. Fee per nonce while (still) Active: the FinalizeRound diff and every later one are free (§5.5).
  if (s.phase === SessionPhase.Active) {
    if (s.balance < s.config.feePerNonce) {
      throw new DevshardError(
        DevshardErrorCode.InsufficientBalance,
        `fee ${s.config.feePerNonce}, balance ${s.balance}`,
      );
    }
    s = { ...s, balance: s.balance - s.config.feePerNonce, fees: s.fees + s.config.feePerNonce };
  }
  // 7. Nonce, expired height-sync flags.
  s = clearExpiredHeightSync({ ...s, latestNonce: nonce });
  let sealed: SealedRecord[] = [];
  // 8. Finalizing: remember where it began; Settlement only by deadline (finalize nonce + N).
  if (s.phase === SessionPhase.Finalizing) {
    if (s.finalizeNonce === 0n) s = { ...s, finalizeNonce: nonce };
    if (s.latestNonce >= s.finalizeNonce + BigInt(s.group.slots.length)) {
      ({ state: s, sealed } = drainLive({ ...s, phase: SessionPhase.Settlement }, s.latestNonce));
    }
  }
  // 9. Auto-seal, Active only.
  if (s.phase === SessionPhase.Active && isAutoSealNonce(s, nonce))
    ({ state: s, sealed } = autoSeal(s, nonce));
  return { state: s, sealed };
}
