// The finalize document (devshard-protocol.md §8.3, reference devshardctl SettlementJSON) and the
// chain message it becomes: built from the settlement payload and its signatures, stored by the
// controller, read back and turned into MsgSettleDevshardEscrow. uint64 values are JSON integers
// (exact), bytes standard base64; required_validations / completed_validations are omitted when
// zero. Reading checks that the document is self-consistent: its state_root is the §6 formula over
// its own fields. Pure: the session's finalize (session/finalize.ts) does the I/O.
import type { DevshardSlotSignature, MsgSettleDevshardEscrow } from '@gonka-gateway/chain';
import { settlementStateRoot } from '../hash/root-formula.js';
import { decodeBase64, encodeBase64 } from '../json/base64.js';
import { asObject, list, str, u32, u64 } from '../json/fields.js';
import { type JsonObject, parseJsonLossless, stringifyJsonLossless } from '../json/lossless.js';
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

/** `{escrow_id, version, state_root, nonce, fees, rest_hash, host_stats, signatures}`. */
export type FinalizeDocument = ReturnType<typeof settlementDocument>;

export interface FinalizeResult {
  readonly document: FinalizeDocument;
  /** The stored JSON text (exact integers); the same text on every call. */
  readonly json: string;
  readonly payload: SettlementPayload;
  /** One entry per slot of every signing host (§8.2, §10 item 10). */
  readonly signatures: readonly DevshardSlotSignature[];
}

function b64(o: JsonObject, key: string): Uint8Array {
  return decodeBase64(str(o, key));
}

/** Reads a stored finalize document back into its payload and signatures. */
export function parseFinalizeDocument(json: string): FinalizeResult {
  const o = asObject(parseJsonLossless(json), 'finalize document');
  const payload: SettlementPayload = {
    escrowId: str(o, 'escrow_id'),
    tag: str(o, 'version'),
    nonce: u64(o, 'nonce'),
    fees: u64(o, 'fees'),
    restHash: b64(o, 'rest_hash'),
    stateRoot: b64(o, 'state_root'),
    hostStats: list(o, 'host_stats').map((v) => {
      const h = asObject(v, 'host_stats entry');
      return {
        slotId: u32(h, 'slot_id'),
        missed: u32(h, 'missed'),
        invalid: u32(h, 'invalid'),
        cost: u64(h, 'cost'),
        requiredValidations: u32(h, 'required_validations'),
        completedValidations: u32(h, 'completed_validations'),
      };
    }),
  };
  const signatures = list(o, 'signatures').map((v) => {
    const s = asObject(v, 'signature entry');
    return { slotId: u32(s, 'slot_id'), signature: b64(s, 'signature') };
  });
  if (Buffer.compare(settlementStateRoot(payload), payload.stateRoot) !== 0) {
    throw new SyntaxError('finalize document: state_root does not match its fields');
  }
  return { document: settlementDocument(payload, signatures), json, payload, signatures };
}
