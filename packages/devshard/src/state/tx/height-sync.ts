// Height-sync transactions (devshard-protocol.md §5.4, §9). Heartbeat and HeightAck are admitted
// while Active; everything else about them is the log plane (state/log-plane.ts). The gateway never
// sends heartbeats or forced turns (§12 #4); a host mempool may carry a HeightAck, which only passes
// when it answers a heartbeat in the log.

import { DevshardError, DevshardErrorCode } from '../../errors.js';
import { SessionPhase } from '../../hash/root-formula.js';
import type { MsgForceHeightSyncTurn } from '../../proto/tx-messages.js';
import type { TxEnv } from '../apply-context.js';
import type { WorkingState } from '../types.js';

export function applyHeartbeatOrAck(s: WorkingState): WorkingState {
  if (s.phase !== SessionPhase.Active) throw new DevshardError(DevshardErrorCode.SessionFinalizing);
  return s;
}

/**
 * ForceHeightSyncTurn: the framing rules are checked; a turn that would open is refused, because the
 * cadence-swallow fields it hashes into the root are not pinned (§12 #4) and a guessed value would
 * split the session. A turn already covering this nonce is ignored, as in the reference.
 */
export function applyForceHeightSyncTurn(
  s: WorkingState,
  msg: MsgForceHeightSyncTurn,
  env: TxEnv,
): WorkingState {
  if (s.phase !== SessionPhase.Active) throw new DevshardError(DevshardErrorCode.SessionFinalizing);
  const slots = BigInt(s.group.slots.length);
  if (msg.triggerNonce !== env.nonce) {
    throw new DevshardError(DevshardErrorCode.InvalidNonce, 'trigger_nonce must equal diff nonce');
  }
  if (msg.slotsNum !== slots) {
    throw new DevshardError(
      DevshardErrorCode.InvalidForceHeightSyncTurn,
      `slots_num ${msg.slotsNum} != ${slots}`,
    );
  }
  if (msg.anchorK < msg.slotsNum) {
    throw new DevshardError(DevshardErrorCode.InvalidForceHeightSyncTurn, 'anchor_k below slots_num');
  }
  if (msg.endNonce !== msg.triggerNonce + msg.slotsNum - 1n) {
    throw new DevshardError(DevshardErrorCode.InvalidForceHeightSyncTurn, 'end_nonce != trigger + slots - 1');
  }
  if (s.heightSync.forcedEnd !== 0n && env.nonce <= s.heightSync.forcedEnd) return s;
  throw new DevshardError(
    DevshardErrorCode.Unsupported,
    'forced height-sync turns are not implemented (§12 #4)',
  );
}
