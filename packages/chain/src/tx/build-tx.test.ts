import { makeSignBytes, makeSignDoc } from '@cosmjs/proto-signing';
import { PubKey } from 'cosmjs-types/cosmos/crypto/secp256k1/keys';
import { AuthInfo, TxBody, TxRaw } from 'cosmjs-types/cosmos/tx/v1beta1/tx';
import { describe, expect, it } from 'vitest';
import { PrivateKey } from '../crypto/private-key.js';
import { sha256, verifyDigest64 } from '../crypto/secp256k1.js';
import { buildUnorderedTx } from './build-tx.js';
import {
  decodeMsgCreateDevshardEscrow,
  encodeMsgCreateDevshardEscrow,
  MSG_CREATE_DEVSHARD_ESCROW,
} from './escrow-messages.js';
import { txHash } from './tx-hash.js';

const key = PrivateKey.fromHex('10af8dc1f63fb90cfa39943a5afbf262cd84f24919e7d05653e3b03313e685ce');
const msg = {
  creator: key.address,
  amount: 5_000_000_000n,
  modelId: 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8',
};

describe('buildUnorderedTx', () => {
  const tx = buildUnorderedTx({
    signer: key,
    messages: [{ typeUrl: MSG_CREATE_DEVSHARD_ESCROW, value: encodeMsgCreateDevshardEscrow(msg) }],
    chainId: 'gonka-devnet',
    accountNumber: 7n,
    fee: { amount: 7_000_000n, gasLimit: 700_000n },
    timeoutTimestampNs: 1_760_000_540_000_000_001n,
  });

  it('decodes back to the same message, unordered, with the timeout and sequence 0', () => {
    const raw = TxRaw.decode(tx.txBytes);
    const body = TxBody.decode(raw.bodyBytes);
    expect(body.unordered).toBe(true);
    expect(body.timeoutTimestamp).toEqual({ seconds: 1_760_000_540n, nanos: 1 });
    expect(body.messages[0]!.typeUrl).toBe(MSG_CREATE_DEVSHARD_ESCROW);
    expect(decodeMsgCreateDevshardEscrow(body.messages[0]!.value)).toEqual(msg);
    const auth = AuthInfo.decode(raw.authInfoBytes);
    expect(auth.signerInfos[0]!.sequence).toBe(0n);
    expect(PubKey.decode(auth.signerInfos[0]!.publicKey!.value).key).toEqual(key.publicKey);
    expect(auth.fee!.gasLimit).toBe(700_000n);
    expect(auth.fee!.amount).toEqual([{ denom: 'ngonka', amount: '7000000' }]);
  });

  it('signs the SignDoc with a 64-byte low-S signature', () => {
    const raw = TxRaw.decode(tx.txBytes);
    const signBytes = makeSignBytes(makeSignDoc(raw.bodyBytes, raw.authInfoBytes, 'gonka-devnet', 7n));
    expect(raw.signatures[0]!.length).toBe(64);
    expect(verifyDigest64(raw.signatures[0]!, sha256(signBytes), key.publicKey)).toBe(true);
    const wrongChain = makeSignBytes(makeSignDoc(raw.bodyBytes, raw.authInfoBytes, 'gonka-mainnet', 7n));
    expect(verifyDigest64(raw.signatures[0]!, sha256(wrongChain), key.publicKey)).toBe(false);
  });

  it('returns the upper-case SHA-256 of the broadcast bytes as the hash', () => {
    expect(tx.txHash).toBe(txHash(tx.txBytes));
    expect(tx.txHash).toMatch(/^[0-9A-F]{64}$/);
  });
});
