// EncodeObjects for the three transactions the gateway sends, checked against the keeper rules that
// can be checked offline (chain-and-network.md §2.6, §5), so an obviously doomed tx never costs a fee.
import type { EncodeObject } from '@cosmjs/proto-signing';
import { MsgSend } from 'cosmjs-types/cosmos/bank/v1beta1/tx';
import { isAddress } from '../crypto/address.js';
import { ChainError } from '../errors.js';
import { BASE_DENOM } from './build-tx.js';
import {
  MSG_CREATE_DEVSHARD_ESCROW,
  MSG_SETTLE_DEVSHARD_ESCROW,
  type MsgCreateDevshardEscrow,
  type MsgSettleDevshardEscrow,
} from './escrow-messages.js';

export const MSG_SEND = '/cosmos.bank.v1beta1.MsgSend';
const UINT64_MAX = (1n << 64n) - 1n;

const invalid = (detail: string) => new ChainError('CHAIN_ERR_INVALID_ARGUMENT', { detail });

function checkAddress(value: string, what: string): void {
  if (!isAddress(value)) throw invalid(`${what} must be a gonka1… address`);
}

function checkU64(value: bigint, what: string, min = 0n): void {
  if (value < min || value > UINT64_MAX)
    throw invalid(`${what} must be ${min > 0n ? 'a positive' : 'an unsigned'} 64-bit integer`);
}

export function msgCreateDevshardEscrow(m: MsgCreateDevshardEscrow): EncodeObject {
  checkAddress(m.creator, 'creator');
  checkU64(m.amount, 'amount', 1n);
  if (m.modelId.trim() === '') throw invalid('model id must not be empty');
  return { typeUrl: MSG_CREATE_DEVSHARD_ESCROW, value: { ...m } };
}

export function msgSettleDevshardEscrow(m: MsgSettleDevshardEscrow): EncodeObject {
  checkAddress(m.settler, 'settler');
  checkU64(m.escrowId, 'escrow id', 1n);
  checkU64(m.nonce, 'nonce');
  checkU64(m.fees, 'fees');
  if (m.stateRoot.length !== 32) throw invalid('state root must be 32 bytes');
  if (m.version === '' || m.version.length > 128) throw invalid('protocol version must be 1–128 characters');
  for (const s of m.signatures) {
    if (s.signature.length !== 65) throw invalid(`slot ${s.slotId} signature must be 65 bytes`);
  }
  const slots = new Set(m.signatures.map((s) => s.slotId));
  if (slots.size !== m.signatures.length) throw invalid('duplicate slot signature');
  return { typeUrl: MSG_SETTLE_DEVSHARD_ESCROW, value: { ...m } };
}

/** `inferenced publish-pubkey` equivalent (§5): 1 ngonka from the account to itself. */
export function msgPublishPubkey(address: string, amount = 1n): EncodeObject {
  checkAddress(address, 'address');
  checkU64(amount, 'amount', 1n);
  return {
    typeUrl: MSG_SEND,
    value: MsgSend.fromPartial({
      fromAddress: address,
      toAddress: address,
      amount: [{ denom: BASE_DENOM, amount: amount.toString() }],
    }),
  };
}
