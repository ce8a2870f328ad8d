// A live record owns exactly its bytes (record.ts `owned`): hashes decoded from a tx or from a small
// base64 string are views into larger buffers, which a record lives long enough to pin.
import { describe, expect, it } from 'vitest';
import { makeRecord, updateRecord } from './record.js';
import { InferenceStatus } from './types.js';

const fields = (promptHash: Uint8Array, responseHash: Uint8Array) => ({
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
    // The encoded entry is the same as with owned bytes, and an owned array is not copied again.
    expect(r.entry).toEqual(makeRecord(fields(new Uint8Array(r.promptHash), new Uint8Array(pooled))).entry);
    expect(updateRecord(r, { votesValid: 1 }).responseHash).toBe(r.responseHash);
  });
});
