// Reading a finalize document back (devshard-protocol.md §8.3; reference devshardctl SettlementJSON):
// what the controller stores after finalize and later turns into MsgSettleDevshardEscrow. Parsing checks that
// the document is self-consistent: its state_root is the §6 formula over its own fields.
import type { DevshardSlotSignature } from '@gonka-gateway/chain';
import { settlementStateRoot } from '../hash/root-formula.js';
import { decodeBase64 } from '../json/base64.js';
import { asObject, list, str, u32, u64 } from '../json/fields.js';
import { type JsonObject, parseJsonLossless } from '../json/lossless.js';
import { settlementDocument } from '../settlement/document.js';
import type { SettlementPayload } from '../settlement/payload.js';

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
