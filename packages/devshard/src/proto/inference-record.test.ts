import { bytesToHex } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import { createMessage } from './codec.js';
import { bitmapBytes, encodeInferenceRecord, InferenceRecordProtoSchema } from './inference-record.js';

describe('InferenceRecordProto (§3.3)', () => {
  it('always emits the 16-byte validated_by, little-endian words', () => {
    const rec = createMessage(InferenceRecordProtoSchema, { validatedBy: bitmapBytes(0n) });
    expect(bytesToHex(encodeInferenceRecord(rec))).toBe(`8a0110${'00'.repeat(16)}`);
    expect(bytesToHex(bitmapBytes((1n << 65n) | 0b101n))).toBe('0500000000000000' + '0200000000000000');
  });

  it('writes the v5 height fields as 18 and 19 only when non-zero (§12 #1)', () => {
    const base = { inferenceId: 1n, validatedBy: bitmapBytes(0n) };
    const plain = encodeInferenceRecord(createMessage(InferenceRecordProtoSchema, base));
    const stamped = encodeInferenceRecord(
      createMessage(InferenceRecordProtoSchema, { ...base, startedAtHeight: 5n, confirmedAtHeight: 6n }),
    );
    expect(bytesToHex(stamped)).toBe(`${bytesToHex(plain)}900105980106`);
  });
});
