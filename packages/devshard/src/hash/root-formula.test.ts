import { concat } from '@gonka-gateway/chain';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import { u64be } from './bytes.js';
import { composeStateRoot, hostStatsHash, SessionPhase, settlementStateRoot } from './root-formula.js';

// Vectors of devshard-protocol.md §6: 5 slots, balance 1 000 000, fees 0, no inferences or warm keys.
const zeroStats = (slotId: number) => ({
  slotId,
  missed: 0,
  invalid: 0,
  cost: 0n,
  requiredValidations: 0,
  completedValidations: 0,
});
const slots = [4, 2, 0, 3, 1].map(zeroStats); // unsorted on purpose
const emptyInferencesHash = sha256(concat([new Uint8Array(32), sha256(new Uint8Array())]));
const zeroHeightSyncHash = sha256(new Uint8Array(52));
const emptyWarmKeysHash = sha256(new Uint8Array());

describe('state root', () => {
  it('hashes host stats sorted by slot, slot 0 as an empty entry', () => {
    expect(bytesToHex(hostStatsHash(slots))).toBe(
      '6c693f8051f9167631975a2a2c5bd236e98e8d706395ed41673705c93fbabbc6',
    );
    expect(bytesToHex(emptyInferencesHash)).toBe(
      '1c9ecec90e28d2461650418635878a5c91e49f47586ecf75f2b0cbb94e897112',
    );
    expect(bytesToHex(zeroHeightSyncHash)).toBe(
      '7955cb2de90dd9efc6df9fdbf5f5d10c114f4135a9a6b52db1003be749e32f7a',
    );
  });

  it('reproduces the v4.1 golden root (v4 rest_hash composition, phase 0)', () => {
    const restHash = sha256(concat([u64be(1_000_000n), emptyInferencesHash, emptyWarmKeysHash]));
    const root = composeStateRoot({
      hostStatsHash: hostStatsHash(slots),
      fees: 0n,
      restHash,
      tag: 'v4.1',
      phase: SessionPhase.Active,
    });
    expect(bytesToHex(root)).toBe('8bce45d285169cbb096d923252d70d10c966378cfc654e6583d6dd4f800fbf7e');
  });

  it('reproduces the v5 roots for phase 0 and phase 2', () => {
    const restHash = sha256(
      concat([u64be(1_000_000n), emptyInferencesHash, emptyWarmKeysHash, zeroHeightSyncHash]),
    );
    const input = { hostStatsHash: hostStatsHash(slots), fees: 0n, restHash, tag: 'v5' };
    expect(bytesToHex(composeStateRoot({ ...input, phase: SessionPhase.Active }))).toBe(
      '0957150e8e7233314894218aa88482bf6c9222f97e216386ffa0d577c3db41e0',
    );
    expect(bytesToHex(settlementStateRoot({ hostStats: slots, fees: 0n, restHash, tag: 'v5' }))).toBe(
      'a6b4a96015e91c1fa6547a3997b3bd7c64e942ca5f6cfdb5b846975a0fece5a8',
    );
  });
});
