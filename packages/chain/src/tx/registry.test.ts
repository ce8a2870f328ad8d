import { BinaryReader, BinaryWriter } from 'cosmjs-types/binary';
import { TxBody, TxRaw } from 'cosmjs-types/cosmos/tx/v1beta1/tx';
import { describe, expect, it } from 'vitest';
import { PrivateKey } from '../crypto/private-key.js';
import {
  encodeMsgCreateDevshardEscrow,
  encodeMsgSettleDevshardEscrow,
  MSG_CREATE_DEVSHARD_ESCROW,
  type MsgSettleDevshardEscrow,
} from './escrow-messages.js';
import { MSG_SEND, msgCreateDevshardEscrow, msgPublishPubkey, msgSettleDevshardEscrow } from './messages.js';
import { createGonkaRegistry, MsgCreateDevshardEscrowType } from './registry.js';
import { TxSigner } from './tx-signer.js';

const key = PrivateKey.fromHex('10af8dc1f63fb90cfa39943a5afbf262cd84f24919e7d05653e3b03313e685ce');
const create = {
  creator: key.address,
  amount: 5_000_000_000n,
  modelId: 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8',
};
const settle: MsgSettleDevshardEscrow = {
  settler: key.address,
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
  version: 'v1',
};

describe('Gonka registry', () => {
  const registry = createGonkaRegistry();

  it('encodes the escrow messages with the existing codecs, byte for byte (§2.1 check value)', () => {
    const bytes = registry.encode({ typeUrl: MSG_CREATE_DEVSHARD_ESCROW, value: create });
    expect(Buffer.from(bytes).toString('hex')).toBe(
      '0a2c676f6e6b613177616a3871396732656b6761726461666336706c673737726775326c33766672673279396a771080e497d0121a265177656e2f5177656e332d323335422d413232422d496e7374727563742d323530372d465038',
    );
    expect(registry.encode(msgSettleDevshardEscrow(settle))).toEqual(encodeMsgSettleDevshardEscrow(settle));
  });

  it('honours the writer argument inside an enclosing message and decodes from a reader', () => {
    const w = BinaryWriter.create().uint32(10).fork();
    MsgCreateDevshardEscrowType.encode(create, w);
    const nested = w.ldelim().finish();
    const reader = new BinaryReader(nested);
    reader.uint32();
    const len = reader.uint32();
    expect(MsgCreateDevshardEscrowType.decode(reader, len)).toEqual(create);
    expect(nested.subarray(2)).toEqual(encodeMsgCreateDevshardEscrow(create));
  });

  it('writes amounts in [2^31, 2^32) correctly inside an enclosing message (BinaryWriter.uint64 does not)', () => {
    for (const amount of [2n ** 31n, 3_000_000_000n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 63n + 5n]) {
      const m = { ...create, amount };
      const w = BinaryWriter.create().uint32(10).fork();
      MsgCreateDevshardEscrowType.encode(m, w);
      const nested = w.ldelim().finish();
      expect(nested.subarray(2)).toEqual(encodeMsgCreateDevshardEscrow(m));
      const reader = new BinaryReader(nested);
      reader.uint32();
      expect(MsgCreateDevshardEscrowType.decode(reader, reader.uint32())).toEqual(m);
    }
  });

  it('fromPartial fills defaults and accepts decimal-string amounts', () => {
    expect(MsgCreateDevshardEscrowType.fromPartial({ amount: '7' })).toEqual({
      creator: '',
      amount: 7n,
      modelId: '',
    });
  });

  it('round-trips signed tx bytes back to the same three messages', () => {
    const signer = new TxSigner({
      key,
      chainId: 'gonka-devnet',
      accountNumber: 1n,
      nowNs: () => 1_760_000_000_000_000_000n,
    });
    const msgs = [
      msgCreateDevshardEscrow(create),
      msgSettleDevshardEscrow(settle),
      msgPublishPubkey(key.address),
    ];
    const tx = signer.prepare(msgs, null);
    const body = registry.decodeTxBody(TxRaw.decode(tx.txBytes).bodyBytes);
    expect(body.messages[0]).toEqual(create);
    expect(body.messages[1]).toEqual(settle);
    expect(body.messages[2]).toMatchObject({
      fromAddress: key.address,
      toAddress: key.address,
      amount: [{ denom: 'ngonka', amount: '1' }],
    });
    expect(TxBody.decode(TxRaw.decode(tx.txBytes).bodyBytes).messages.map((m) => m.typeUrl)).toEqual([
      MSG_CREATE_DEVSHARD_ESCROW,
      '/inference.inference.MsgSettleDevshardEscrow',
      MSG_SEND,
    ]);
  });
});

describe('message builders refuse doomed messages before any fee is paid', () => {
  it('checks creator, amount and model', () => {
    expect(() => msgCreateDevshardEscrow({ ...create, creator: 'cosmos1xyz' })).toThrow(/creator/);
    expect(() => msgCreateDevshardEscrow({ ...create, amount: 0n })).toThrow(/amount/);
    expect(() => msgCreateDevshardEscrow({ ...create, modelId: ' ' })).toThrow(/model/);
  });

  it('checks state root, version, signature length and duplicate slots', () => {
    expect(() => msgSettleDevshardEscrow({ ...settle, stateRoot: new Uint8Array(31) })).toThrow(/32 bytes/);
    expect(() => msgSettleDevshardEscrow({ ...settle, version: '' })).toThrow(/version/);
    expect(() =>
      msgSettleDevshardEscrow({ ...settle, signatures: [{ slotId: 1, signature: new Uint8Array(64) }] }),
    ).toThrow(/65 bytes/);
    const dup = { slotId: 1, signature: new Uint8Array(65) };
    expect(() => msgSettleDevshardEscrow({ ...settle, signatures: [dup, dup] })).toThrow(/duplicate/);
  });
});
