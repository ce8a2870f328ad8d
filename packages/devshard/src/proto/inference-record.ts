// InferenceRecordProto (devshard-protocol.md §3.3), the entry hashed into live_hash and folded into
// sealed_acc. validated_by is always 16 bytes (two little-endian uint64 words), so always emitted.
// The v5 height fields are assumed to be numbers 18 and 19 (§12 #1); they are omitted while zero, so
// unstamped sessions hash identically whatever their real numbers are.
import { defineMessage, encodeMessage, type WithUnknown } from './codec.js';

export interface InferenceRecordProto extends WithUnknown {
  inferenceId: bigint;
  status: number;
  executorSlot: number;
  model: string;
  promptHash: Uint8Array;
  responseHash: Uint8Array;
  inputLength: bigint;
  maxTokens: bigint;
  inputTokens: bigint;
  outputTokens: bigint;
  reservedCost: bigint;
  actualCost: bigint;
  startedAt: bigint;
  confirmedAt: bigint;
  votesValid: number;
  votesInvalid: number;
  validatedBy: Uint8Array;
  startedAtHeight: bigint;
  confirmedAtHeight: bigint;
}

export const STARTED_AT_HEIGHT_FIELD = 18;
export const CONFIRMED_AT_HEIGHT_FIELD = 19;

export const InferenceRecordProtoSchema = defineMessage<InferenceRecordProto>('InferenceRecordProto', [
  { no: 1, key: 'inferenceId', kind: 'uint64' },
  { no: 2, key: 'status', kind: 'uint32' },
  { no: 3, key: 'executorSlot', kind: 'uint32' },
  { no: 4, key: 'model', kind: 'string' },
  { no: 5, key: 'promptHash', kind: 'bytes' },
  { no: 6, key: 'responseHash', kind: 'bytes' },
  { no: 7, key: 'inputLength', kind: 'uint64' },
  { no: 8, key: 'maxTokens', kind: 'uint64' },
  { no: 9, key: 'inputTokens', kind: 'uint64' },
  { no: 10, key: 'outputTokens', kind: 'uint64' },
  { no: 11, key: 'reservedCost', kind: 'uint64' },
  { no: 12, key: 'actualCost', kind: 'uint64' },
  { no: 13, key: 'startedAt', kind: 'int64' },
  { no: 14, key: 'confirmedAt', kind: 'int64' },
  { no: 15, key: 'votesValid', kind: 'uint32' },
  { no: 16, key: 'votesInvalid', kind: 'uint32' },
  { no: 17, key: 'validatedBy', kind: 'bytes' },
  { no: STARTED_AT_HEIGHT_FIELD, key: 'startedAtHeight', kind: 'uint64' },
  { no: CONFIRMED_AT_HEIGHT_FIELD, key: 'confirmedAtHeight', kind: 'uint64' },
]);

export function encodeInferenceRecord(record: InferenceRecordProto): Uint8Array {
  if (record.validatedBy.length !== 16) throw new RangeError('validated_by must be 16 bytes');
  return encodeMessage(InferenceRecordProtoSchema, record);
}

/** The 128-bit slot bitmap as 16 bytes: word 0 (slots 0–63) then word 1, each little-endian. */
export function bitmapBytes(mask: bigint): Uint8Array {
  const out = new Uint8Array(16);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, mask & 0xffff_ffff_ffff_ffffn, true);
  view.setBigUint64(8, (mask >> 64n) & 0xffff_ffff_ffff_ffffn, true);
  return out;
}
