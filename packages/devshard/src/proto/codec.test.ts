import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import { DevshardErrorCode } from '../errors.js';
import { createMessage, decodeMessage, encodeMessage } from './codec.js';
import { decodeTx, encodeTx } from './devshard-tx.js';
import { TimeoutVoteContentSchema } from './signed-contents.js';
import { txOf } from './tx-builders.js';
import { MsgFinishInferenceSchema, MsgTimeoutInferenceSchema, MsgValidationSchema } from './tx-messages.js';

describe('deterministic proto3 encoding (§2.3)', () => {
  it('encodes the TimeoutVoteContent golden vector', () => {
    const bytes = encodeMessage(
      TimeoutVoteContentSchema,
      createMessage(TimeoutVoteContentSchema, {
        escrowId: 'escrow-1',
        inferenceId: 1n,
        reason: 1,
        accept: true,
      }),
    );
    expect(bytesToHex(bytes)).toBe('0a08657363726f772d31100118012001');
  });

  it('emits a set empty oneof member: finalize_round is 42 00', () => {
    expect(bytesToHex(txOf.finalizeRound().bytes)).toBe('4200');
  });

  it('omits defaults and keeps field order', () => {
    const msg = createMessage(MsgValidationSchema, {
      inferenceId: 0n,
      validatorSlot: 3,
      valid: false,
      escrowId: '',
    });
    expect(bytesToHex(encodeMessage(MsgValidationSchema, msg))).toBe('1003');
  });

  it('writes negative int64 and enum values as 10-byte two-complement varints', () => {
    const timeout = createMessage(MsgTimeoutInferenceSchema, { reason: -1 });
    expect(bytesToHex(encodeMessage(MsgTimeoutInferenceSchema, timeout))).toBe('10ffffffffffffffffff01');
    const decoded = decodeMessage(MsgTimeoutInferenceSchema, hexToBytes('10ffffffffffffffffff01'));
    expect(decoded.reason).toBe(-1);
  });

  it('round-trips uint64 values above 2^53 exactly', () => {
    const msg = createMessage(MsgFinishInferenceSchema, {
      inferenceId: 0xffff_ffff_ffff_ffffn,
      executorSlot: 0xffff_ffff,
    });
    const decoded = decodeMessage(MsgFinishInferenceSchema, encodeMessage(MsgFinishInferenceSchema, msg));
    expect(decoded.inferenceId).toBe(0xffff_ffff_ffff_ffffn);
    expect(decoded.executorSlot).toBe(0xffff_ffff);
  });
});

describe('decoding with Go semantics', () => {
  it('keeps unknown fields and re-emits them after the known ones', () => {
    // MsgValidation{1: 7} + unknown field 9 (varint 5) + {2: 1}: Go moves the unknown field last.
    const input = hexToBytes('0807' + '4805' + '1001');
    const msg = decodeMessage(MsgValidationSchema, input);
    expect(msg.inferenceId).toBe(7n);
    expect(msg.validatorSlot).toBe(1);
    expect(bytesToHex(msg.unknown!)).toBe('4805');
    expect(bytesToHex(encodeMessage(MsgValidationSchema, msg))).toBe('080710014805');
  });

  it('treats a known field number with another wire type as unknown', () => {
    const input = hexToBytes('0a0161'); // field 1 as bytes, but inference_id is a varint
    const msg = decodeMessage(MsgValidationSchema, input);
    expect(msg.inferenceId).toBe(0n);
    expect(bytesToHex(msg.unknown!)).toBe('0a0161');
  });

  it('takes the last occurrence of a scalar and truncates uint32 like protobuf-go', () => {
    const msg = decodeMessage(MsgValidationSchema, hexToBytes('08010802108080808010'));
    expect(msg.inferenceId).toBe(2n);
    expect(msg.validatorSlot).toBe(0); // 2^32 truncated to uint32
  });

  it('treats any non-zero bool varint as true', () => {
    expect(decodeMessage(MsgValidationSchema, hexToBytes('1802')).valid).toBe(true);
  });

  it('rejects a string that is not valid UTF-8 (proto3)', () => {
    expect(() => decodeMessage(MsgValidationSchema, hexToBytes('2a01ff'))).toThrow(
      expect.objectContaining({ code: DevshardErrorCode.Malformed }),
    );
  });

  it('rejects truncated input as malformed', () => {
    expect(() => decodeMessage(MsgValidationSchema, hexToBytes('2a05ab'))).toThrow(
      expect.objectContaining({ code: DevshardErrorCode.Malformed }),
    );
  });

  it('lets the last oneof member win and merges a repeated one', () => {
    // validation{inference_id 1} then finalize_round, then validation{slot 2} + validation{valid}.
    const switched = decodeTx(hexToBytes('2a020801' + '4200'));
    expect(switched.tx.kind).toBe('finalizeRound');
    expect(switched.canonical).toBe(false);
    expect(bytesToHex(switched.bytes)).toBe('4200');
    const merged = decodeTx(hexToBytes('2a021002' + '2a021801'));
    expect(merged.tx.kind).toBe('validation');
    if (merged.tx.kind === 'validation') {
      expect(merged.tx.msg.validatorSlot).toBe(2);
      expect(merged.tx.msg.valid).toBe(true);
    }
  });

  it('keeps canonical received bytes as they are', () => {
    const tx = txOf.validation(
      createMessage(MsgValidationSchema, { inferenceId: 5n, validatorSlot: 1, valid: true }),
    );
    const decoded = decodeTx(tx.bytes);
    expect(decoded.canonical).toBe(true);
    expect(decoded.bytes).toEqual(tx.bytes);
    expect(encodeTx(decoded.tx).bytes).toEqual(tx.bytes);
  });

  it('decodes a wrapper without a known member as kind none', () => {
    const decoded = decodeTx(hexToBytes('620100')); // field 12 (reserved)
    expect(decoded.tx.kind).toBe('none');
    expect(bytesToHex(decoded.bytes)).toBe('620100');
  });
});
