// The cosmjs Registry for Gonka transactions (chain-and-network.md §2.5): cosmjs's default Cosmos
// types plus the two devshard escrow messages.
//
// Why hand-written cosmjs GeneratedTypes and not @bufbuild/protobuf + protoc-gen-es:
//  - The escrow field numbers come from the official hand-written encoders and keeper, not from the
//    chain's current tx.proto (§2.1, §6.1). Generating from that .proto could silently produce the
//    wrong bytes; the hand-written codecs in escrow-messages.ts are pinned by the §2.1 check value.
//  - No code generation step, no protoc toolchain, no second protobuf runtime: cosmjs and
//    cosmjs-types are already needed for TxBody/AuthInfo/MsgSend, and a GeneratedType needs only
//    encode/decode/fromPartial.
//  - The adapters below wrap the existing codecs, so there is exactly one encoder per message.
import { type GeneratedType, Registry } from '@cosmjs/proto-signing';
import { defaultRegistryTypes } from '@cosmjs/stargate';
import { type BinaryReader, BinaryWriter } from 'cosmjs-types/binary';
import { parseUint64 } from '../encoding/integer.js';
import { readFields } from '../encoding/proto.js';
import {
  type DevshardSettlementHostStats,
  decodeMsgCreateDevshardEscrow,
  decodeMsgSettleDevshardEscrow,
  encodeMsgCreateDevshardEscrow,
  encodeMsgSettleDevshardEscrow,
  MSG_CREATE_DEVSHARD_ESCROW,
  MSG_SETTLE_DEVSHARD_ESCROW,
  type MsgCreateDevshardEscrow,
  type MsgSettleDevshardEscrow,
} from './escrow-messages.js';

/**
 * Appends an already-encoded message's fields to a writer, so the adapter honours cosmjs's
 * `encode(message, writer)` contract (the writer may be mid-way through an enclosing message). Our
 * codecs emit only varint and length-delimited fields, re-emitted here byte for byte.
 */
function appendFields(writer: BinaryWriter, encoded: Uint8Array): BinaryWriter {
  for (const f of readFields(encoded)) {
    if (f.wireType === 0) {
      // BinaryWriter.uint64 (cosmjs-types 0.11) corrupts [2^31, 2^32): such values keep the low word
      // as a negative int32. Below 2^32 the uint32 varint is the same bytes, written correctly.
      const w = writer.uint32((f.field << 3) | 0);
      if (f.varint < 0x1_0000_0000n) w.uint32(Number(f.varint));
      else w.uint64(f.varint);
    } else if (f.wireType === 2) writer.uint32((f.field << 3) | 2).bytes(f.bytes);
    else throw new RangeError('escrow codecs emit no fixed-width fields');
  }
  return writer;
}

function readInput(input: Uint8Array | BinaryReader, length?: number): Uint8Array {
  if (input instanceof Uint8Array) return length === undefined ? input : input.subarray(0, length);
  const end = length === undefined ? input.len : input.pos + length;
  const bytes = input.buf.subarray(input.pos, end);
  input.pos = end;
  return bytes;
}

// fromPartial accepts amounts as bigint, number or decimal string (JSON callers), never floats.
const u64 = (v: unknown) => (v === undefined ? 0n : parseUint64(v));

export const MsgCreateDevshardEscrowType = {
  encode: (m: MsgCreateDevshardEscrow, w: BinaryWriter = BinaryWriter.create()) =>
    appendFields(w, encodeMsgCreateDevshardEscrow(m)),
  decode: (input: Uint8Array | BinaryReader, length?: number) =>
    decodeMsgCreateDevshardEscrow(readInput(input, length)),
  fromPartial: (p: Partial<Record<keyof MsgCreateDevshardEscrow, unknown>>): MsgCreateDevshardEscrow => ({
    creator: typeof p.creator === 'string' ? p.creator : '',
    amount: u64(p.amount),
    modelId: typeof p.modelId === 'string' ? p.modelId : '',
  }),
} satisfies GeneratedType;

const hostStatsFromPartial = (s: Partial<DevshardSettlementHostStats>): DevshardSettlementHostStats => ({
  slotId: s.slotId ?? 0,
  missed: s.missed ?? 0,
  invalid: s.invalid ?? 0,
  cost: u64(s.cost),
  requiredValidations: s.requiredValidations ?? 0,
  completedValidations: s.completedValidations ?? 0,
});

export const MsgSettleDevshardEscrowType = {
  encode: (m: MsgSettleDevshardEscrow, w: BinaryWriter = BinaryWriter.create()) =>
    appendFields(w, encodeMsgSettleDevshardEscrow(m)),
  decode: (input: Uint8Array | BinaryReader, length?: number) =>
    decodeMsgSettleDevshardEscrow(readInput(input, length)),
  fromPartial: (p: Partial<MsgSettleDevshardEscrow>): MsgSettleDevshardEscrow => ({
    settler: p.settler ?? '',
    escrowId: u64(p.escrowId),
    stateRoot: p.stateRoot ?? new Uint8Array(),
    nonce: u64(p.nonce),
    restHash: p.restHash ?? new Uint8Array(),
    hostStats: (p.hostStats ?? []).map(hostStatsFromPartial),
    signatures: (p.signatures ?? []).map((s) => ({
      slotId: s.slotId ?? 0,
      signature: s.signature ?? new Uint8Array(),
    })),
    fees: u64(p.fees),
    version: p.version ?? '',
  }),
} satisfies GeneratedType;

/** A fresh registry (no shared instance: callers own theirs, CONTRIBUTING "no singletons"). */
export function createGonkaRegistry(): Registry {
  return new Registry([
    ...defaultRegistryTypes,
    [MSG_CREATE_DEVSHARD_ESCROW, MsgCreateDevshardEscrowType],
    [MSG_SETTLE_DEVSHARD_ESCROW, MsgSettleDevshardEscrowType],
  ]);
}
