// Hand-written codecs for the two devshard escrow messages (chain-and-network.md §2.1). Field numbers
// follow the official encoders and keeper, not the chain's current tx.proto (§6 of that document).
// They implement cosmjs's GeneratedType (encode/decode/fromPartial) so a cosmjs Registry can carry them.
import { ProtoWriter, readFields } from '../encoding/proto.js';

export const MSG_CREATE_DEVSHARD_ESCROW = '/inference.inference.MsgCreateDevshardEscrow';
export const MSG_SETTLE_DEVSHARD_ESCROW = '/inference.inference.MsgSettleDevshardEscrow';

export interface MsgCreateDevshardEscrow {
  creator: string;
  amount: bigint;
  modelId: string;
}

export interface DevshardSettlementHostStats {
  slotId: number;
  missed: number;
  invalid: number;
  cost: bigint;
  requiredValidations: number;
  completedValidations: number;
}

export interface DevshardSlotSignature {
  slotId: number;
  /** 65 bytes r‖s‖v. */
  signature: Uint8Array;
}

export interface MsgSettleDevshardEscrow {
  settler: string;
  escrowId: bigint;
  stateRoot: Uint8Array;
  nonce: bigint;
  restHash: Uint8Array;
  hostStats: DevshardSettlementHostStats[];
  signatures: DevshardSlotSignature[];
  fees: bigint;
  /** Field 9, the protocol version tag (e.g. `v5`). */
  version: string;
}

function u32(value: bigint): number {
  if (value > 0xffffffffn) throw new RangeError('uint32 field out of range');
  return Number(value);
}

export function encodeHostStats(s: DevshardSettlementHostStats): Uint8Array {
  return new ProtoWriter()
    .uint32(1, s.slotId)
    .uint32(2, s.missed)
    .uint32(3, s.invalid)
    .uint64(4, s.cost)
    .uint32(5, s.requiredValidations)
    .uint32(6, s.completedValidations)
    .finish();
}

export function decodeHostStats(bytes: Uint8Array): DevshardSettlementHostStats {
  const out: DevshardSettlementHostStats = {
    slotId: 0,
    missed: 0,
    invalid: 0,
    cost: 0n,
    requiredValidations: 0,
    completedValidations: 0,
  };
  for (const f of readFields(bytes)) {
    if (f.wireType !== 0) continue;
    if (f.field === 1) out.slotId = u32(f.varint);
    else if (f.field === 2) out.missed = u32(f.varint);
    else if (f.field === 3) out.invalid = u32(f.varint);
    else if (f.field === 4) out.cost = f.varint;
    else if (f.field === 5) out.requiredValidations = u32(f.varint);
    else if (f.field === 6) out.completedValidations = u32(f.varint);
  }
  return out;
}

export function encodeMsgCreateDevshardEscrow(m: MsgCreateDevshardEscrow): Uint8Array {
  return new ProtoWriter().string(1, m.creator).uint64(2, m.amount).string(3, m.modelId).finish();
}

export function decodeMsgCreateDevshardEscrow(bytes: Uint8Array): MsgCreateDevshardEscrow {
  const out: MsgCreateDevshardEscrow = { creator: '', amount: 0n, modelId: '' };
  for (const f of readFields(bytes)) {
    if (f.field === 1 && f.wireType === 2) out.creator = new TextDecoder().decode(f.bytes);
    else if (f.field === 2 && f.wireType === 0) out.amount = f.varint;
    else if (f.field === 3 && f.wireType === 2) out.modelId = new TextDecoder().decode(f.bytes);
  }
  return out;
}

export function encodeMsgSettleDevshardEscrow(m: MsgSettleDevshardEscrow): Uint8Array {
  const w = new ProtoWriter()
    .string(1, m.settler)
    .uint64(2, m.escrowId)
    .bytes(3, m.stateRoot)
    .uint64(4, m.nonce)
    .bytes(5, m.restHash);
  for (const s of m.hostStats) w.message(6, encodeHostStats(s));
  for (const s of m.signatures) {
    w.message(7, new ProtoWriter().uint32(1, s.slotId).bytes(2, s.signature).finish());
  }
  return w.uint64(8, m.fees).string(9, m.version).finish();
}

export function decodeMsgSettleDevshardEscrow(bytes: Uint8Array): MsgSettleDevshardEscrow {
  const text = new TextDecoder();
  const out: MsgSettleDevshardEscrow = {
    settler: '',
    escrowId: 0n,
    stateRoot: new Uint8Array(),
    nonce: 0n,
    restHash: new Uint8Array(),
    hostStats: [],
    signatures: [],
    fees: 0n,
    version: '',
  };
  for (const f of readFields(bytes)) {
    if (f.wireType === 0) {
      if (f.field === 2) out.escrowId = f.varint;
      else if (f.field === 4) out.nonce = f.varint;
      else if (f.field === 8) out.fees = f.varint;
    } else if (f.wireType === 2) {
      if (f.field === 1) out.settler = text.decode(f.bytes);
      else if (f.field === 3) out.stateRoot = f.bytes;
      else if (f.field === 5) out.restHash = f.bytes;
      else if (f.field === 6) out.hostStats.push(decodeHostStats(f.bytes));
      else if (f.field === 7) {
        const sig: DevshardSlotSignature = { slotId: 0, signature: new Uint8Array() };
        for (const g of readFields(f.bytes)) {
          if (g.field === 1 && g.wireType === 0) sig.slotId = u32(g.varint);
          else if (g.field === 2 && g.wireType === 2) sig.signature = g.bytes;
        }
        out.signatures.push(sig);
      } else if (f.field === 9) out.version = text.decode(f.bytes);
    }
  }
  return out;
}
