// State signatures for settlement (devshard-protocol.md §7.2, §8.2): a host's signature counts for
// every slot its address owns, and the chain counts one vote per entry, so the payload lists one
// entry per slot (a multi-slot host's signature repeated). Quorum is ⌊2S/3⌋ + 1 slots.
import type { DevshardSlotSignature } from '@gonka-gateway/chain';
import { recoverStateSigner } from '../signing/state-signature.js';
import type { ApplyContext } from '../state/apply-context.js';
import { quorumThreshold } from '../state/group.js';
import type { SessionState } from '../state/types.js';

/**
 * Whether `signature` over StateSignatureContent{stateRoot, escrow id, nonce} is from the host with
 * cold address `hostAddress`: its cold key, a warm key bound to one of its slots, or (lookup) a
 * warm key granted by it — the chain accepts any authz grantee.
 */
export function isHostStateSignature(
  state: SessionState,
  hostAddress: string,
  stateRoot: Uint8Array,
  nonce: bigint,
  signature: Uint8Array,
  ctx: ApplyContext = {},
): boolean {
  const slots = state.group.slotsOf.get(hostAddress);
  if (!slots) return false;
  const signer = recoverStateSigner(stateRoot, state.escrowId, nonce, signature, ctx.recover);
  if (signer === null) return false;
  if (signer === hostAddress) return true;
  if (slots.some((slot) => state.warmKeys.get(slot) === signer)) return true;
  return ctx.isWarmKey?.(hostAddress, signer) ?? false;
}

/** One entry per slot owned by a signing address, in slot order. */
export function slotSignatures(
  state: SessionState,
  byAddress: ReadonlyMap<string, Uint8Array>,
): DevshardSlotSignature[] {
  const out: DevshardSlotSignature[] = [];
  state.group.slots.forEach((address, slotId) => {
    const signature = byAddress.get(address);
    if (signature) out.push({ slotId, signature });
  });
  return out;
}

export function hasSettlementQuorum(
  state: SessionState,
  signatures: readonly DevshardSlotSignature[],
): boolean {
  const slots = new Set(signatures.map((s) => s.slotId));
  return slots.size >= quorumThreshold(state.group.slots.length);
}
