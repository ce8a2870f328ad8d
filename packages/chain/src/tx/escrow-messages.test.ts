import { bytesToHex } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import {
  decodeMsgCreateDevshardEscrow,
  decodeMsgSettleDevshardEscrow,
  encodeMsgCreateDevshardEscrow,
  encodeMsgSettleDevshardEscrow,
  type MsgSettleDevshardEscrow,
} from './escrow-messages.js';

describe('escrow message codecs', () => {
  it('encodes MsgCreateDevshardEscrow to the check value of chain-and-network.md §2.1', () => {
    const msg = {
      creator: 'gonka1waj8q9g2ekgardafc6plg77rgu2l3vfrg2y9jw',
      amount: 5_000_000_000n,
      modelId: 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8',
    };
    const bytes = encodeMsgCreateDevshardEscrow(msg);
    expect(bytesToHex(bytes)).toBe(
      '0a2c676f6e6b613177616a3871396732656b6761726461666336706c673737726775326c33766672673279396a771080e497d0121a265177656e2f5177656e332d323335422d413232422d496e7374727563742d323530372d465038',
    );
    expect(decodeMsgCreateDevshardEscrow(bytes)).toEqual(msg);
  });

  it('round-trips MsgSettleDevshardEscrow, keeping an all-zero host-stats entry', () => {
    const msg: MsgSettleDevshardEscrow = {
      settler: 'gonka1waj8q9g2ekgardafc6plg77rgu2l3vfrg2y9jw',
      escrowId: 42n,
      stateRoot: new Uint8Array(32).fill(7),
      nonce: 1234n,
      restHash: new Uint8Array(32).fill(9),
      hostStats: [
        { slotId: 0, missed: 0, invalid: 0, cost: 0n, requiredValidations: 0, completedValidations: 0 },
        { slotId: 1, missed: 2, invalid: 1, cost: 99_999n, requiredValidations: 3, completedValidations: 2 },
      ],
      signatures: [{ slotId: 1, signature: new Uint8Array(65).fill(3) }],
      fees: 11_000n,
      version: 'v5',
    };
    const bytes = encodeMsgSettleDevshardEscrow(msg);
    expect(bytesToHex(bytes)).toContain('3200'); // field 6, empty entry for slot 0
    expect(decodeMsgSettleDevshardEscrow(bytes)).toEqual(msg);
  });

  it('rejects truncated bytes', () => {
    const bytes = encodeMsgCreateDevshardEscrow({ creator: 'gonka1x', amount: 5n, modelId: 'm' });
    expect(() => decodeMsgCreateDevshardEscrow(bytes.subarray(0, bytes.length - 1))).toThrow();
  });
});
