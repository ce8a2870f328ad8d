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

/**
 * The bytes alone, in a buffer of their own. A hash decoded from a tx is a view into the tx's
 * buffer, and a small base64 decode (Buffer.from) is a view into an 8 KB slab of Node's Buffer
 * pool: a live record holding such a view would keep the whole buffer alive for its seal grace
 * (issue 10 §5, bounded memory). Copied once; an owned array passes through.
 */
function owned(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
    ? bytes
    : new Uint8Array(bytes);
}

/**
 * One hidden class for every record (fields assigned in one order, then frozen): the live-hash and
 * sealing scans read records by the thousand, and per-record shapes made those reads megamorphic.
 */
// The fields are InferenceRecord's, merged in rather than declared again here; the constructor
// assigns them once, in one order, before freezing (hence writable in this merged view only).
type Assignable<T> = { -readonly [K in keyof T]: T[K] };
// biome-ignore lint/correctness/noUnusedVariables: merged into the class below, every field assigned in its constructor
interface Record extends Assignable<InferenceRecord> {}
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: see the interface above
class Record implements InferenceRecord {
  constructor(f: InferenceRecordFields) {
    this.id = f.id;
    this.status = f.status;
    this.executorSlot = f.executorSlot;
    this.model = f.model;
    this.promptHash = owned(f.promptHash);
    this.responseHash = owned(f.responseHash);
    this.inputLength = f.inputLength;
    this.maxTokens = f.maxTokens;
    this.inputTokens = f.inputTokens;
    this.outputTokens = f.outputTokens;
    this.reservedCost = f.reservedCost;
    this.actualCost = f.actualCost;
    this.startedAt = f.startedAt;
    this.confirmedAt = f.confirmedAt;
    this.votesValid = f.votesValid;
    this.votesInvalid = f.votesInvalid;
    this.validatedBy = f.validatedBy;
    this.startedAtHeight = f.startedAtHeight;
    this.confirmedAtHeight = f.confirmedAtHeight;
    this.entry = recordEntry(this);
    Object.freeze(this);
  }
}

/** A record from its fields (an `entry` among them is ignored: it is always re-encoded). */
export function makeRecord(fields: InferenceRecordFields): InferenceRecord {
  return new Record(fields);
}

export function updateRecord(
  record: InferenceRecord,
  changes: Partial<InferenceRecordFields>,
): InferenceRecord {
  return new Record({ ...record, ...changes });
}

export function hasSlotBit(mask: bigint, slot: number): boolean {
  return slot < 128 && ((mask >> BigInt(slot)) & 1n) === 1n;
}

/** Slots ≥ 128 are ignored, as in the reference bitmap. */
export function withSlotBit(mask: bigint, slot: number): bigint {
  return slot < 128 ? mask | (1n << BigInt(slot)) : mask;
}
