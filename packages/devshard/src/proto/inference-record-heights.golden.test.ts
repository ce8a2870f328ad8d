// Golden vector for devshard-protocol.md §12 #1: the v5 record height fields. Source of the choice:
// the reference hash.go (gonka-ai/gonka@c6c474aa devshard/state/hash.go, marshalInferenceEntry) puts
// StartedAtHeight and ConfirmedAtHeight into InferenceRecordProto between confirmed_at (14) and
// votes_valid (15) in source order, but no stored reference revision of state.proto / state.pb.go
// (gonka-ai/gonka@32dead7a, @dd53646a) declares them — those list fields 1–17 only. The numbers are
// therefore still an assumption: 18 and 19, uint64, omitted while zero. This vector pins that
// assumption byte for byte so a change is deliberate; a host that disagrees shows up as a root
// mismatch at the first stamped diff, which the session turns into the `stamp_layout_mismatch`
// fault (session/stamp-check.ts) instead of a bare divergence.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import { createMessage } from './codec.js';
import {
  bitmapBytes,
  CONFIRMED_AT_HEIGHT_FIELD,
  encodeInferenceRecord,
  InferenceRecordProtoSchema,
  STARTED_AT_HEIGHT_FIELD,
} from './inference-record.js';

const STAMPED_RECORD_HEX =
  '080710011807220f5177656e2f5177656e332d323335422a20' +
  'aa'.repeat(32) +
  '386440c80158ac026880e2cfaa067083e2cfaa06' +
  '8a0110' +
  '00'.repeat(16) +
  '900187ad4b' + // field 18 (started_at_height) = 1 234 567
  '980188ad4b'; // field 19 (confirmed_at_height) = 1 234 568

describe('v5 record height fields (§12 #1 golden vector)', () => {
  it('encodes a stamped Started record with heights as fields 18 and 19', () => {
    expect([STARTED_AT_HEIGHT_FIELD, CONFIRMED_AT_HEIGHT_FIELD]).toEqual([18, 19]);
    const rec = createMessage(InferenceRecordProtoSchema, {
      inferenceId: 7n,
      status: 1,
      executorSlot: 7,
      model: 'Qwen/Qwen3-235B',
      promptHash: new Uint8Array(32).fill(0xaa),
      inputLength: 100n,
      maxTokens: 200n,
      reservedCost: 300n,
      startedAt: 1_700_000_000n,
      confirmedAt: 1_700_000_003n,
      validatedBy: bitmapBytes(0n),
      startedAtHeight: 1_234_567n,
      confirmedAtHeight: 1_234_568n,
    });
    const entry = encodeInferenceRecord(rec);
    expect(bytesToHex(entry)).toBe(STAMPED_RECORD_HEX);
    // live_hash of a map holding only this record (§6: InferencesMapProto framing).
    const live = sha256(new Uint8Array([0x0a, entry.length, ...entry]));
    expect(bytesToHex(live)).toBe('338c62ddd0eb300b57c09b9759ef6a7d19761c7c74a81cd3cb5631c18f513b73');
  });
});
