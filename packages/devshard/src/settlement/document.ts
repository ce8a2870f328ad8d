// The finalize document (devshard-protocol.md §8.3, reference devshardctl SettlementJSON) and the
// chain message it becomes. uint64 values are JSON integers (exact), bytes standard base64;
// required_validations / completed_validations are omitted when zero.
import type { DevshardSlotSignature, MsgSettleDevshardEscrow } from '@gonka-gateway/chain';
import { encodeBase64 } from '../json/base64.js';
import { stringifyJsonLossless } from '../json/lossless.js';
import type { SettlementPayload } from './payload.js';

export function settlementDocument(payload: SettlementPayload, signatures: readonly DevshardSlotSignature[]) {
  return {
    escrow_id: payload.escrowId,
    version: payload.tag,
    state_root: encodeBase64(payload.stateRoot),
    nonce: payload.nonce,
    fees: payload.fees,
    rest_hash: encodeBase64(payload.restHash),
    host_stats: payload.hostStats.map((h) => ({
      slot_id: h.slotId,
      missed: h.missed,
      invalid: h.invalid,
      cost: h.cost,
      required_validations: h.requiredValidations === 0 ? undefined : h.requiredValidations,
      completed_validations: h.completedValidations === 0 ? undefined : h.completedValidations,
    })),
    signatures: signatures.map((s) => ({ slot_id: s.slotId, signature: encodeBase64(s.signature) })),
  };
}

export function settlementDocumentJson(
  payload: SettlementPayload,
  signatures: readonly DevshardSlotSignature[],
): string {
  return stringifyJsonLossless(settlementDocument(payload, signatures));
}

/** MsgSettleDevshardEscrow for @gonka-gateway/chain's encoder; `settler` must be the creator. */
export function settlementMessage(
  payload: SettlementPayload,
  signatures: readonly DevshardSlotSignature[],
  settler: string,
): MsgSettleDevshardEscrow {
  return {
    settler,
    escrowId: BigInt(payload.escrowId),
    stateRoot: payload.stateRoot,
    nonce: payload.nonce,
    restHash: payload.restHash,
    hostStats: [...payload.hostStats],
    signatures: [...signatures],
    fees: payload.fees,
    version: payload.tag,
  };
}
