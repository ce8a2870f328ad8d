// Builds and signs an unordered Cosmos SDK transaction (chain-and-network.md §2.2): sequence 0,
// a timeout timestamp, SIGN_MODE_DIRECT, one secp256k1 signer. Returns the TxRaw bytes and their
// hash, so the caller can record the hash before anything is broadcast.

import { encodeSecp256k1Pubkey } from '@cosmjs/amino';
import { encodePubkey, makeAuthInfoBytes, makeSignBytes, makeSignDoc } from '@cosmjs/proto-signing';
import { SignMode } from 'cosmjs-types/cosmos/tx/signing/v1beta1/signing';
import { TxBody, TxRaw } from 'cosmjs-types/cosmos/tx/v1beta1/tx';
import type { Any } from 'cosmjs-types/google/protobuf/any';
import type { PrivateKey } from '../crypto/private-key.js';
import { sha256 } from '../crypto/secp256k1.js';
import { txHash } from './tx-hash.js';

export const BASE_DENOM = 'ngonka';

export interface TxFee {
  /** Fee in base denom. */
  amount: bigint;
  gasLimit: bigint;
}

export interface UnorderedTxInput {
  signer: PrivateKey;
  /** Already-encoded messages (type URL + protobuf bytes). */
  messages: readonly Any[];
  chainId: string;
  accountNumber: bigint;
  fee: TxFee;
  /** Nanoseconds since the Unix epoch; each unordered tx of one account needs a distinct value. */
  timeoutTimestampNs: bigint;
  memo?: string;
}

export interface SignedTx {
  txBytes: Uint8Array;
  /** Upper-case hex SHA-256 of txBytes. */
  txHash: string;
  bodyBytes: Uint8Array;
  authInfoBytes: Uint8Array;
}

export function buildUnorderedTx(input: UnorderedTxInput): SignedTx {
  if (input.fee.gasLimit <= 0n || input.fee.gasLimit > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new RangeError('gas limit must be a positive safe integer');
  }
  const bodyBytes = TxBody.encode(
    TxBody.fromPartial({
      messages: [...input.messages],
      memo: input.memo ?? '',
      unordered: true,
      timeoutTimestamp: {
        seconds: input.timeoutTimestampNs / 1_000_000_000n,
        nanos: Number(input.timeoutTimestampNs % 1_000_000_000n),
      },
    }),
  ).finish();
  const pubkey = encodePubkey(encodeSecp256k1Pubkey(input.signer.publicKey));
  const authInfoBytes = makeAuthInfoBytes(
    [{ pubkey, sequence: 0n }],
    [{ denom: BASE_DENOM, amount: input.fee.amount.toString() }],
    Number(input.fee.gasLimit),
    undefined,
    undefined,
    SignMode.SIGN_MODE_DIRECT,
  );
  const signDoc = makeSignDoc(bodyBytes, authInfoBytes, input.chainId, input.accountNumber);
  const signature = input.signer.signDigest64(sha256(makeSignBytes(signDoc)));
  const txBytes = TxRaw.encode(
    TxRaw.fromPartial({ bodyBytes, authInfoBytes, signatures: [signature] }),
  ).finish();
  return { txBytes, txHash: txHash(txBytes), bodyBytes, authInfoBytes };
}
