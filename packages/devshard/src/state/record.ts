// Inference records carry their InferenceRecordProto bytes, encoded once per change, so computing
// live_hash on every diff does not re-encode unchanged records (§6).
import { bitmapBytes, encodeInferenceRecord } from '../proto/inference-record.js';
import type { InferenceRecord, InferenceRecordFields } from './types.js';

export function recordEntry(r: InferenceRecordFields): Uint8Array {
  return encodeInferenceRecord({
    inferenceId: r.id,
    status: r.status,
    executorSlot: r.executorSlot,
    model: r.model,
    promptHash: r.promptHash,
    responseHash: r.responseHash,
    inputLength: r.inputLength,
    maxTokens: r.maxTokens,
    inputTokens: r.inputTokens,
    outputTokens: r.outputTokens,
    reservedCost: r.reservedCost,
    actualCost: r.actualCost,
    startedAt: r.startedAt,
    confirmedAt: r.confirmedAt,
    votesValid: r.votesValid,
    votesInvalid: r.votesInvalid,
    validatedBy: bitmapBytes(r.validatedBy),
    startedAtHeight: r.startedAtHeight,
    confirmedAtHeight: r.confirmedAtHeight,
  });
}

export function makeRecord(fields: InferenceRecordFields): InferenceRecord {
  const { entry: _ignored, ...plain } = fields as InferenceRecordFields & { entry?: Uint8Array };
  return Object.freeze({ ...plain, entry: recordEntry(plain) });
}

export function updateRecord(
  record: InferenceRecord,
  changes: Partial<InferenceRecordFields>,
): InferenceRecord {
  return makeRecord({ ...record, ...changes });
}

export function hasSlotBit(mask: bigint, slot: number): boolean {
  return slot < 128 && ((mask >> BigInt(slot)) & 1n) === 1n;
}

/** Slots ≥ 128 are ignored, as in the reference bitmap. */
export function withSlotBit(mask: bigint, slot: number): bigint {
  return slot < 128 ? mask | (1n << BigInt(slot)) : mask;
}
