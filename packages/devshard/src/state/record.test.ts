// The compact record layout (record.ts): the entry is the InferenceRecordProto encoding of exactly
// the fields given, the hashes read back from it are owned copies (a hash decoded from a tx or from
// a small base64 string is a view into a larger buffer, which a live record must not pin), and
// uint64/int64 values round-trip exactly, above 2^53 included.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bitmapBytes, encodeInferenceRecord } from '../proto/inference-record.js';
import { makeFixture } from '../testing/session-fixture.js';
import { LiveRecords } from './live-records.js';
import { fieldsOf, makeRecord, updateRecord } from './record.js';
import { encodeStateSnapshot } from './snapshot.js';
import { type InferenceRecord, type InferenceRecordFields, InferenceStatus } from './types.js';

const fields = (promptHash: Uint8Array, responseHash: Uint8Array): InferenceRecordFields => ({
  id: 7n,
  status: InferenceStatus.Finished,
  executorSlot: 3,
  model: 'm',
  promptHash,
  responseHash,
  inputLength: 10n,
  maxTokens: 100n,
  inputTokens: 10n,
  outputTokens: 20n,
  reservedCost: 1_100n,
  actualCost: 300n,
  startedAt: 1_700_000_000n,
  confirmedAt: 1_700_000_001n,
  votesValid: 0,
  votesInvalid: 0,
  validatedBy: 0n,
  startedAtHeight: 0n,
  confirmedAtHeight: 0n,
});

/** Every field by name (a record's bigint fields are getters, which a spread would not copy). */
function fieldValues(r: InferenceRecordFields): { [K in keyof InferenceRecordFields]: unknown } {
  const keys = Object.keys(fields(new Uint8Array(0), new Uint8Array(0))) as (keyof InferenceRecordFields)[];
  const out = Object.fromEntries(keys.map((k) => [k, r[k]]));
  return { ...out, promptHash: [...r.promptHash], responseHash: [...r.responseHash] } as never;
}

function protoOf(f: InferenceRecordFields): Uint8Array {
  return encodeInferenceRecord({
    inferenceId: f.id,
    status: f.status,
    executorSlot: f.executorSlot,
    model: f.model,
    promptHash: f.promptHash,
    responseHash: f.responseHash,
    inputLength: f.inputLength,
    maxTokens: f.maxTokens,
    inputTokens: f.inputTokens,
    outputTokens: f.outputTokens,
    reservedCost: f.reservedCost,
    actualCost: f.actualCost,
    startedAt: f.startedAt,
    confirmedAt: f.confirmedAt,
    votesValid: f.votesValid,
    votesInvalid: f.votesInvalid,
    validatedBy: bitmapBytes(f.validatedBy),
    startedAtHeight: f.startedAtHeight,
    confirmedAtHeight: f.confirmedAtHeight,
  });
}

describe('a live record keeps only its own bytes', () => {
  it('copies a hash that is a view into a larger buffer (a decoded tx, a pooled base64 decode)', () => {
    const pooled = Buffer.from(`${'A'.repeat(43)}=`, 'base64'); // 32 bytes, a view into Node's 8 KB pool
    expect(pooled.buffer.byteLength).toBeGreaterThan(32);
    const tx = new Uint8Array(4_096).fill(9);
    const r = makeRecord(fields(tx.subarray(100, 132), pooled));
    expect(r.promptHash.buffer.byteLength).toBe(32);
    expect(r.responseHash.buffer.byteLength).toBe(32);
    expect([...r.promptHash]).toEqual([...tx.subarray(100, 132)]);
    expect([...r.responseHash]).toEqual([...pooled]);
    expect(r.entry).toEqual(protoOf(fields(new Uint8Array(tx.subarray(100, 132)), new Uint8Array(pooled))));
    expect([...updateRecord(r, { votesValid: 1 }).responseHash]).toEqual([...pooled]);
  });

  it('reads back an empty response hash (omitted from the entry) and empty prompt hash as empty', () => {
    const r = makeRecord(fields(new Uint8Array(0), new Uint8Array(0)));
    expect(r.promptHash).toEqual(new Uint8Array(0));
    expect(r.responseHash).toEqual(new Uint8Array(0));
    expect(r.entry).toEqual(protoOf(fields(new Uint8Array(0), new Uint8Array(0))));
  });
});

describe('record fields round-trip exactly', () => {
  it('keeps uint64 values above 2^53 and negative int64 values exact, and encodes them', () => {
    const f: InferenceRecordFields = {
      ...fields(new Uint8Array(32).fill(1), new Uint8Array(32).fill(2)),
      id: 2n ** 53n + 1n,
      model: 'a model with a long name/Qwen3-235B-A22B-Instruct-2507-FP8',
      inputLength: 2n ** 64n - 1n,
      maxTokens: 2n ** 53n,
      inputTokens: 2n ** 53n - 1n,
      outputTokens: 9_007_199_254_740_993n,
      reservedCost: 18_446_744_073_709_551_615n,
      actualCost: 2n ** 63n,
      startedAt: -(2n ** 63n),
      confirmedAt: -1n,
      votesValid: 5,
      votesInvalid: 2,
      validatedBy: 2n ** 128n - 1n,
      startedAtHeight: 2n ** 60n + 3n,
      confirmedAtHeight: 1n,
    };
    const r = makeRecord(f);
    expect(fieldValues(r)).toEqual(fieldValues(f));
    expect(r.entry).toEqual(protoOf(f));
    const changed = updateRecord(r, { status: InferenceStatus.Validated, actualCost: 2n ** 64n - 2n });
    expect(fieldValues(changed)).toEqual(
      fieldValues({ ...f, status: InferenceStatus.Validated, actualCost: 2n ** 64n - 2n }),
    );
  });

  it('compares records by their fields: equal fields, equal records; one field apart, unequal', () => {
    const f = fields(new Uint8Array(32).fill(1), new Uint8Array(0));
    expect(makeRecord(f)).toEqual(makeRecord({ ...f }));
    expect(makeRecord(f)).not.toEqual(makeRecord({ ...f, confirmedAt: f.confirmedAt + 1n }));
    expect(makeRecord(f)).not.toEqual(makeRecord({ ...f, id: 2n ** 53n + 7n }));
  });
});

const u64 = fc.oneof(
  fc.constant(0n),
  fc.bigInt({ min: 1n, max: 2n ** 32n }),
  fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
);
const i64 = fc.oneof(fc.constant(0n), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), u64);
const u32 = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 2 ** 32 - 1 }));
const hash = fc.oneof(fc.constant(new Uint8Array(0)), fc.uint8Array({ minLength: 1, maxLength: 40 }));

const randomFields: fc.Arbitrary<InferenceRecordFields> = fc.record({
  id: i64,
  status: fc.constantFrom(...Object.values(InferenceStatus)),
  executorSlot: u32,
  // Any UTF-16, lone surrogates included: written as ProtoWriter writes them.
  model: fc.oneof(
    fc.string(),
    fc.string({ unit: 'binary' }),
    fc.constant('Qwen/Qwen3-235B-A22B-Instruct-2507-FP8'),
  ),
  promptHash: hash,
  responseHash: hash,
  inputLength: u64,
  maxTokens: u64,
  inputTokens: u64,
  outputTokens: u64,
  reservedCost: u64,
  actualCost: u64,
  startedAt: i64,
  confirmedAt: i64,
  votesValid: u32,
  votesInvalid: u32,
  validatedBy: fc.oneof(fc.constant(0n), fc.bigInt({ min: 0n, max: 2n ** 128n - 1n })),
  startedAtHeight: u64,
  confirmedAtHeight: u64,
});

describe('the entry written field by field (record-entry.ts)', () => {
  it('is encodeInferenceRecord byte for byte, and every field reads back as given', () => {
    fc.assert(
      fc.property(randomFields, (f) => {
        const r = makeRecord(f);
        expect(Buffer.from(r.entry).toString('hex')).toBe(Buffer.from(protoOf(f)).toString('hex'));
        expect(fieldValues(r)).toEqual(fieldValues(f));
        // The one-pass read (updateRecord) gives the same fields as the getters.
        expect(fieldValues(updateRecord(r, {}))).toEqual(fieldValues(f));
      }),
      { numRuns: 500 },
    );
  });

  it('refuses values a field read back from the entry could not return as given', () => {
    const f = fields(new Uint8Array(32).fill(1), new Uint8Array(0));
    expect(() => makeRecord({ ...f, reservedCost: -1n })).toThrow(RangeError);
    expect(() => makeRecord({ ...f, inputTokens: 2n ** 64n })).toThrow(RangeError);
    expect(() => makeRecord({ ...f, votesValid: 1.5 })).toThrow(RangeError);
    expect(() => makeRecord({ ...f, votesInvalid: -1 })).toThrow(RangeError);
    expect(() => makeRecord({ ...f, validatedBy: 2n ** 128n })).toThrow(RangeError);
    expect(() => makeRecord({ ...f, startedAt: -(2n ** 63n) - 1n })).toThrow(RangeError);
    // The same values are refused by the schema encoder or cannot be read back from its bytes.
    expect(() => protoOf({ ...f, inputTokens: 2n ** 64n })).toThrow(RangeError);
  });
});

describe('a compact record in a snapshot (snapshot.ts writeCompactRecord)', () => {
  const base = makeFixture({ tag: 'v5' }).state;
  /** The snapshot bytes, or the error class when the snapshot refuses the record (a negative id). */
  const encoded = (inferences: ReadonlyMap<bigint, InferenceRecord>) => {
    try {
      return Buffer.from(encodeStateSnapshot({ ...base, inferences })).toString('hex');
    } catch (error) {
      return (error as Error).constructor.name;
    }
  };

  it('is written as the same fields in plain form are, byte for byte', () => {
    fc.assert(
      fc.property(randomFields, (f) => {
        const r = makeRecord(f);
        // A plain map of plain fields takes the generic writer (fieldsOf, one bigint per field).
        const plain: InferenceRecord = { ...fieldsOf(r), entry: r.entry };
        expect(encoded(LiveRecords.from([r]))).toBe(encoded(new Map([[r.id, plain]])));
      }),
      { numRuns: 500 },
    );
  });
});
