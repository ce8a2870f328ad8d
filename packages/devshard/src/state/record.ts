// Inference records carry their InferenceRecordProto bytes, encoded once per change, so computing
// live_hash on every diff does not re-encode unchanged records (§6).
//
// Layout (bounded memory; docs/performance.md, "Findings"): records stay live until the seal gate
// (3,600 s + execution timeout past confirmation), so a busy replica holds hundreds of thousands,
// and each is kept small:
// - the entry bytes are a one-byte string (char i = byte i, "latin1"): one heap object of 16 bytes
//   plus the bytes, where a Uint8Array costs a typed-array object, an ArrayBuffer, a backing store
//   and its bookkeeping outside the heap (≈ 2 KB of RSS per record with three of them);
// - the entry is the record: only what the whole-map scans read (id, status, executor slot,
//   started_at, confirmed_at, validated_by: sealing, timeouts, delivery, a host's validation pass)
//   and the model are kept beside it; every other field is read back from the entry when asked for
//   (one tx reads a few fields of one record), so a finished record waiting for its seal holds no
//   second copy of them;
// - uint64/int64 fields kept beside the entry are numbers while they are safe integers
//   (|v| ≤ 2^53 − 1) and the exact bigint beyond; every getter returns the exact bigint;
// - model names come from a small intern table: every record of a model shares one string.
import { CONFIRMED_AT_HEIGHT_FIELD, STARTED_AT_HEIGHT_FIELD } from '../proto/inference-record.js';
import {
  bigOf,
  EntryReader,
  entryTextOf,
  latin1Bytes,
  modelFieldText,
  PROMPT_HASH_FIELD,
  RESPONSE_HASH_FIELD,
  type StoredInt,
  storedInt,
} from './record-entry.js';
import type { InferenceRecord, InferenceRecordFields } from './types.js';

export { type StoredInt, storedInt } from './record-entry.js';

/** A model name and its encoded entry field, shared by the records of that model. */
interface ModelName {
  readonly name: string;
  readonly field: string;
}

/**
 * Model names seen in records, so the records of one model share a string instead of each holding
 * the copy its tx was decoded into, and its field is encoded once. Bounded: past the limit a name
 * is kept as it is and encoded each time (a session sending ever-new names gets no sharing, and the
 * table does not grow without end).
 */
const MODEL_NAMES = new Map<string, ModelName>();
const MODEL_NAMES_LIMIT = 1_024;

function modelName(model: string): ModelName {
  const known = MODEL_NAMES.get(model);
  if (known !== undefined) return known;
  const named = { name: model, field: modelFieldText(model) };
  if (MODEL_NAMES.size < MODEL_NAMES_LIMIT) MODEL_NAMES.set(model, named);
  return named;
}

const EMPTY_BYTES = new Uint8Array(0);

/**
 * One hidden class for every record (fields assigned in one order, then frozen): the live-hash and
 * sealing scans read records by the thousand, and per-record shapes made those reads megamorphic.
 * The public own fields (the entry string among them, which every field is encoded into) are what
 * two records are compared by; the 64-bit fields kept beside it sit in private slots.
 */
export class Record implements InferenceRecord {
  /** InferenceRecordProto bytes as a one-byte string: what live_hash and sealed_acc hash. */
  readonly entryText: string;
  readonly status: InferenceRecord['status'];
  readonly executorSlot: number;
  readonly model: string;
  readonly #id: StoredInt;
  readonly #startedAt: StoredInt;
  readonly #confirmedAt: StoredInt;
  readonly #validatedBy: StoredInt;

  constructor(f: InferenceRecordFields) {
    const model = modelName(f.model);
    this.entryText = entryTextOf(f, model.field);
    this.status = f.status;
    this.executorSlot = f.executorSlot;
    this.model = model.name;
    this.#id = storedInt(f.id);
    this.#startedAt = storedInt(f.startedAt);
    this.#confirmedAt = storedInt(f.confirmedAt);
    this.#validatedBy = storedInt(f.validatedBy);
    Object.freeze(this);
  }

  /** The id in its stored form: what the live map orders and finds records by, without a bigint. */
  static idKey(r: Record): StoredInt {
    return r.#id;
  }

  /** started_at, confirmed_at and validated_by in their stored form (a snapshot writes them as they are). */
  static startedAtKey(r: Record): StoredInt {
    return r.#startedAt;
  }
  static confirmedAtKey(r: Record): StoredInt {
    return r.#confirmedAt;
  }
  static validatedByKey(r: Record): StoredInt {
    return r.#validatedBy;
  }

  get id(): bigint {
    return bigOf(this.#id);
  }
  get startedAt(): bigint {
    return bigOf(this.#startedAt);
  }
  get confirmedAt(): bigint {
    return bigOf(this.#confirmedAt);
  }
  // Read back from the entry (field numbers of §3.3, inference-record.ts).
  get promptHash(): Uint8Array {
    return new EntryReader(this.entryText).bytes(PROMPT_HASH_FIELD);
  }
  /** Empty until Finish. */
  get responseHash(): Uint8Array {
    return new EntryReader(this.entryText).bytes(RESPONSE_HASH_FIELD);
  }
  get inputLength(): bigint {
    return bigOf(new EntryReader(this.entryText).number(7));
  }
  get maxTokens(): bigint {
    return bigOf(new EntryReader(this.entryText).number(8));
  }
  get inputTokens(): bigint {
    return bigOf(new EntryReader(this.entryText).number(9));
  }
  get outputTokens(): bigint {
    return bigOf(new EntryReader(this.entryText).number(10));
  }
  get reservedCost(): bigint {
    return bigOf(new EntryReader(this.entryText).number(11));
  }
  get actualCost(): bigint {
    return bigOf(new EntryReader(this.entryText).number(12));
  }
  get votesValid(): number {
    return Number(new EntryReader(this.entryText).number(15));
  }
  get votesInvalid(): number {
    return Number(new EntryReader(this.entryText).number(16));
  }
  get validatedBy(): bigint {
    return bigOf(this.#validatedBy);
  }
  get startedAtHeight(): bigint {
    return bigOf(new EntryReader(this.entryText).number(STARTED_AT_HEIGHT_FIELD));
  }
  get confirmedAtHeight(): bigint {
    return bigOf(new EntryReader(this.entryText).number(CONFIRMED_AT_HEIGHT_FIELD));
  }
  /** The InferenceRecordProto bytes, in an array of their own. */
  get entry(): Uint8Array {
    return latin1Bytes(this.entryText);
  }

  /** Every field, the ones kept in the entry read in one pass (a change re-encodes them all). */
  fields(): InferenceRecordFields {
    const f: { -readonly [K in keyof InferenceRecordFields]: InferenceRecordFields[K] } = {
      id: this.id,
      status: this.status,
      executorSlot: this.executorSlot,
      model: this.model,
      promptHash: EMPTY_BYTES,
      responseHash: EMPTY_BYTES,
      inputLength: 0n,
      maxTokens: 0n,
      inputTokens: 0n,
      outputTokens: 0n,
      reservedCost: 0n,
      actualCost: 0n,
      startedAt: this.startedAt,
      confirmedAt: this.confirmedAt,
      votesValid: 0,
      votesInvalid: 0,
      validatedBy: this.validatedBy,
      startedAtHeight: 0n,
      confirmedAtHeight: 0n,
    };
    const reader = new EntryReader(this.entryText);
    for (let field = reader.next(); field !== -1; field = reader.next()) {
      const key = ENTRY_FIELD_KEYS[field];
      if (field === PROMPT_HASH_FIELD) f.promptHash = reader.bytesHere();
      else if (field === RESPONSE_HASH_FIELD) f.responseHash = reader.bytesHere();
      else if (key === 'votesValid' || key === 'votesInvalid') f[key] = Number(reader.varint());
      else if (key !== undefined) f[key] = bigOf(reader.varint());
      else reader.skip(field); // kept beside the entry
    }
    return f;
  }
}

/** The uint64/uint32 fields read back from the entry, by field number (§3.3). */
const ENTRY_FIELD_KEYS: readonly (
  | 'inputLength'
  | 'maxTokens'
  | 'inputTokens'
  | 'outputTokens'
  | 'reservedCost'
  | 'actualCost'
  | 'votesValid'
  | 'votesInvalid'
  | 'startedAtHeight'
  | 'confirmedAtHeight'
  | undefined
)[] = (() => {
  const keys: (typeof ENTRY_FIELD_KEYS)[number][] = [];
  keys[7] = 'inputLength';
  keys[8] = 'maxTokens';
  keys[9] = 'inputTokens';
  keys[10] = 'outputTokens';
  keys[11] = 'reservedCost';
  keys[12] = 'actualCost';
  keys[15] = 'votesValid';
  keys[16] = 'votesInvalid';
  keys[STARTED_AT_HEIGHT_FIELD] = 'startedAtHeight';
  keys[CONFIRMED_AT_HEIGHT_FIELD] = 'confirmedAtHeight';
  return keys;
})();

/**
 * Every field of a record, read once (getters included: a spread copies own fields only); for a
 * Record, the fields kept in its entry are read in one pass, not one seek per field.
 */
export function fieldsOf(r: InferenceRecordFields): InferenceRecordFields {
  if (r instanceof Record) return r.fields();
  return {
    id: r.id,
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
    validatedBy: r.validatedBy,
    startedAtHeight: r.startedAtHeight,
    confirmedAtHeight: r.confirmedAtHeight,
  };
}

/**
 * A record's entry bytes to hash at once (sealing folds each sealed record's entry): a view into
 * Node's shared Buffer pool, not an array of its own, so it must not be kept.
 */
export function entryToHash(r: InferenceRecord): Uint8Array {
  return r instanceof Record ? Buffer.from(r.entryText, 'latin1') : r.entry;
}

/** A record from its fields (an `entry` among them is ignored: it is always re-encoded). */
export function makeRecord(fields: InferenceRecordFields): Record {
  return new Record(fields);
}

/** `r` itself when it is a Record, else a Record of its fields (e.g. a plain object from a test). */
export function asRecord(r: InferenceRecordFields): Record {
  return r instanceof Record ? r : new Record(fieldsOf(r));
}

export function updateRecord(record: InferenceRecord, changes: Partial<InferenceRecordFields>): Record {
  return new Record({ ...fieldsOf(record), ...changes });
}

export function hasSlotBit(mask: bigint, slot: number): boolean {
  return slot < 128 && ((mask >> BigInt(slot)) & 1n) === 1n;
}

/** Slots ≥ 128 are ignored, as in the reference bitmap. */
export function withSlotBit(mask: bigint, slot: number): bigint {
  return slot < 128 ? mask | (1n << BigInt(slot)) : mask;
}
