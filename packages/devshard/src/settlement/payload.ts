// The settlement payload of a final state (devshard-protocol.md §8.3): host_stats for all slots,
// rest_hash (after the drain), fees, tag and the final nonce. Its phase-2 root is the root the hosts
// signed, which is also what the chain recomputes (chain-and-network.md §2.6 rule 4).
import type { DevshardSettlementHostStats } from '@gonka-gateway/chain';
import { DevshardError, DevshardErrorCode } from '../errors.js';
import { SessionPhase, settlementStateRoot } from '../hash/root-formula.js';
import { restHashOf } from '../state/root.js';
import type { SessionState } from '../state/types.js';

export interface SettlementPayload {
  readonly escrowId: string;
  /** state_root_and_protocol_version (the tag). */
  readonly tag: string;
  readonly nonce: bigint;
  readonly fees: bigint;
  readonly restHash: Uint8Array;
  /** One entry per slot, in slot order (fields 1–6 only, §12 #9). */
  readonly hostStats: readonly DevshardSettlementHostStats[];
  readonly stateRoot: Uint8Array;
}

export function buildSettlementPayload(state: SessionState): SettlementPayload {
  if (state.phase !== SessionPhase.Settlement) {
    throw new DevshardError(
      DevshardErrorCode.NotSettled,
      `phase ${state.phase} at nonce ${state.latestNonce}`,
    );
  }
  const hostStats = state.hostStats.map((h, slotId) => ({ slotId, ...h }));
  const restHash = restHashOf(state, state.liveHash);
  const stateRoot = settlementStateRoot({ hostStats, fees: state.fees, restHash, tag: state.tag });
  if (Buffer.compare(stateRoot, state.root) !== 0) {
    // Unreachable unless the state was altered outside apply: never settle on a root hosts did not sign.
    throw new DevshardError(DevshardErrorCode.NotSettled, 'settlement root differs from the state root');
  }
  return {
    escrowId: state.escrowId,
    tag: state.tag,
    nonce: state.latestNonce,
    fees: state.fees,
    restHash,
    hostStats,
    stateRoot,
  };
}
