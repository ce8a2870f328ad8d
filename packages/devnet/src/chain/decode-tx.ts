// Decodes TxRaw → TxBody/AuthInfo → messages (chain-and-network.md §2.2), rejecting what the real
// chain would reject at decode (sdk/2) or ValidateBasic. Only single-signer SIGN_MODE_DIRECT txs of
// the three message types the devnet executes are accepted; anything else fails like an
// unregistered type would on the real chain.
import {
  decodeMsgCreateDevshardEscrow,
  decodeMsgSettleDevshardEscrow,
  isAddress,
  MSG_CREATE_DEVSHARD_ESCROW,
  MSG_SETTLE_DEVSHARD_ESCROW,
  type MsgCreateDevshardEscrow,
  type MsgSettleDevshardEscrow,
  txHash,
} from '@gonka-gateway/chain';
import { MsgSend } from 'cosmjs-types/cosmos/bank/v1beta1/tx';
import { PubKey } from 'cosmjs-types/cosmos/crypto/secp256k1/keys';
import { SignMode } from 'cosmjs-types/cosmos/tx/signing/v1beta1/signing';
import { AuthInfo, TxBody, TxRaw } from 'cosmjs-types/cosmos/tx/v1beta1/tx';
import { DENOM } from './bank.js';
import { SdkErrors } from './errors.js';
import { MSG_SEND } from './params.js';

export const SECP256K1_PUBKEY_TYPE = '/cosmos.crypto.secp256k1.PubKey';

export type DecodedMsg =
  | { typeUrl: typeof MSG_SEND; signer: string; value: MsgSend }
  | { typeUrl: typeof MSG_CREATE_DEVSHARD_ESCROW; signer: string; value: MsgCreateDevshardEscrow }
  | { typeUrl: typeof MSG_SETTLE_DEVSHARD_ESCROW; signer: string; value: MsgSettleDevshardEscrow };

export interface DecodedTx {
  hash: string;
  txBytes: Uint8Array;
  bodyBytes: Uint8Array;
  authInfoBytes: Uint8Array;
  signature: Uint8Array;
  messages: DecodedMsg[];
  memo: string;
  unordered: boolean;
  /** ns since the Unix epoch; null when unset. */
  timeoutTimestampNs: bigint | null;
  timeoutHeight: bigint;
  /** From signer_infos; null when omitted (then the account's stored key is used). */
  signerPubKey: Uint8Array | null;
  signMode: number;
  sequence: bigint;
  /** ngonka. */
  fee: bigint;
  gasLimit: bigint;
}

function decodeOrThrow<T>(what: string, decode: () => T): T {
  try {
    return decode();
  } catch (err) {
    throw SdkErrors.txDecode(`${what}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function decodeMessage(typeUrl: string, value: Uint8Array): DecodedMsg {
  if (typeUrl === MSG_SEND) {
    const msg = decodeOrThrow('MsgSend', () => MsgSend.decode(value));
    return { typeUrl, signer: msg.fromAddress, value: msg };
  }
  if (typeUrl === MSG_CREATE_DEVSHARD_ESCROW) {
    const msg = decodeOrThrow('MsgCreateDevshardEscrow', () => decodeMsgCreateDevshardEscrow(value));
    return { typeUrl, signer: msg.creator, value: msg };
  }
  if (typeUrl === MSG_SETTLE_DEVSHARD_ESCROW) {
    const msg = decodeOrThrow('MsgSettleDevshardEscrow', () => decodeMsgSettleDevshardEscrow(value));
    return { typeUrl, signer: msg.settler, value: msg };
  }
  throw SdkErrors.txDecode(`unable to resolve type URL ${typeUrl}`);
}

function parseCoinAmount(amount: string): bigint {
  if (!/^[0-9]+$/.test(amount)) throw SdkErrors.invalidCoins(`invalid coin amount ${JSON.stringify(amount)}`);
  return BigInt(amount);
}

export function decodeTx(txBytes: Uint8Array): DecodedTx {
  const raw = decodeOrThrow('TxRaw', () => TxRaw.decode(txBytes));
  const body = decodeOrThrow('TxBody', () => TxBody.decode(raw.bodyBytes));
  const authInfo = decodeOrThrow('AuthInfo', () => AuthInfo.decode(raw.authInfoBytes));

  if (body.messages.length === 0) throw SdkErrors.invalidRequest('must contain at least one message');
  const messages = body.messages.map((any) => decodeMessage(any.typeUrl, any.value));
  for (const msg of messages) {
    if (!isAddress(msg.signer))
      throw SdkErrors.invalidAddress(`invalid signer address ${JSON.stringify(msg.signer)}`);
  }

  if (raw.signatures.length === 0) throw SdkErrors.noSignatures('');
  if (authInfo.signerInfos.length !== 1 || raw.signatures.length !== 1) {
    throw SdkErrors.unauthorized(
      `wrong number of signers; expected 1, got ${authInfo.signerInfos.length} signer infos and ${raw.signatures.length} signatures`,
    );
  }
  const signerInfo = authInfo.signerInfos[0]!;
  let signerPubKey: Uint8Array | null = null;
  if (signerInfo.publicKey) {
    if (signerInfo.publicKey.typeUrl !== SECP256K1_PUBKEY_TYPE) {
      throw SdkErrors.invalidPubKey(`unsupported public key type ${signerInfo.publicKey.typeUrl}`);
    }
    const key = decodeOrThrow('PubKey', () => PubKey.decode(signerInfo.publicKey!.value)).key;
    if (key.length !== 33)
      throw SdkErrors.invalidPubKey('secp256k1 public key must be 33 bytes (compressed)');
    signerPubKey = key;
  }
  const signMode = signerInfo.modeInfo?.single?.mode ?? -1;

  const fee = authInfo.fee;
  let feeAmount = 0n;
  for (const coin of fee?.amount ?? []) {
    if (coin.denom !== DENOM)
      throw SdkErrors.insufficientFee(`fee denom ${coin.denom} is not accepted, pay in ${DENOM}`);
    feeAmount += parseCoinAmount(coin.amount);
  }

  const ts = body.timeoutTimestamp;
  const timeoutTimestampNs =
    ts && (ts.seconds !== 0n || ts.nanos !== 0) ? ts.seconds * 1_000_000_000n + BigInt(ts.nanos) : null;

  return {
    hash: txHash(txBytes),
    txBytes,
    bodyBytes: raw.bodyBytes,
    authInfoBytes: raw.authInfoBytes,
    signature: raw.signatures[0]!,
    messages,
    memo: body.memo,
    unordered: body.unordered,
    timeoutTimestampNs,
    timeoutHeight: body.timeoutHeight,
    signerPubKey,
    signMode,
    sequence: signerInfo.sequence,
    fee: feeAmount,
    gasLimit: fee?.gasLimit ?? 0n,
  };
}

export const SIGN_MODE_DIRECT = SignMode.SIGN_MODE_DIRECT;
