// A devnet per test for the devnet's own tests: valid txs built with @gonka-gateway/chain (tests then tamper
// with them), a settlement payload built the way a gateway does it, and balance snapshots.
import {
  buildUnorderedTx,
  type DevshardSettlementHostStats,
  encodeMsgCreateDevshardEscrow,
  encodeMsgSettleDevshardEscrow,
  MSG_CREATE_DEVSHARD_ESCROW,
  MSG_SETTLE_DEVSHARD_ESCROW,
  type MsgSettleDevshardEscrow,
  type PrivateKey,
  type SignedTx,
  sha256,
} from '@gonka-gateway/chain';
import { settlementStateRoot, stateSignatureDigest } from '@gonka-gateway/devshard';
import { MsgSend } from 'cosmjs-types/cosmos/bank/v1beta1/tx';
import { PubKey } from 'cosmjs-types/cosmos/crypto/secp256k1/keys';
import { SignMode } from 'cosmjs-types/cosmos/tx/signing/v1beta1/signing';
import { AuthInfo, SignDoc, TxBody, TxRaw } from 'cosmjs-types/cosmos/tx/v1beta1/tx';
import type { Any } from 'cosmjs-types/google/protobuf/any';
import { MODULE_NAMES, moduleAddress } from '../chain/bank.js';
import { MSG_SEND } from '../chain/params.js';
import type { EscrowRow } from '../chain/stores.js';
import { type Devnet, startDevnet } from '../devnet.js';
import { type DevAccount, QWEN_MODEL } from '../genesis.js';
import type { DevnetOptions } from '../options.js';

/** Loosely typed JSON for assertions on response bodies. */
// biome-ignore lint/suspicious/noExplicitAny: test assertions walk arbitrary JSON
export type JsonBody = Record<string, any>;

export const NINE_MINUTES_NS = 9n * 60n * 1_000_000_000n;
export const CREATE_GAS = 200_000n;
/** 10 ngonka/gas, the highest enabled fee-group price at genesis. */
export const CREATE_FEE = 2_000_000n;

export function startTestDevnet(options: DevnetOptions = {}): Promise<Devnet> {
  return startDevnet({ ports: 'ephemeral', blockIntervalMs: 0, env: {}, ...options });
}

export function account(devnet: Devnet, name: string): DevAccount {
  const found = devnet.accounts.find((a) => a.name === name);
  if (!found) throw new Error(`no dev account ${name}`);
  return found;
}

export interface TxOptions {
  fee?: bigint;
  gasLimit?: bigint;
  chainId?: string;
  accountNumber?: bigint;
  timeoutNs?: bigint;
}

/** Builds signed unordered txs against one devnet, each with a distinct timeout timestamp. */
export class TxFactory {
  #counter = 0n;

  constructor(private readonly devnet: Devnet) {}

  nextTimeoutNs(): bigint {
    this.#counter += 1n;
    return this.devnet.blocks.timeNs + NINE_MINUTES_NS + this.#counter;
  }

  sign(signer: PrivateKey, messages: Any[], opts: TxOptions = {}): SignedTx {
    return buildUnorderedTx({
      signer,
      messages,
      chainId: opts.chainId ?? this.devnet.chainId,
      accountNumber: opts.accountNumber ?? this.devnet.chain.account(signer.address)!.accountNumber,
      fee: { amount: opts.fee ?? CREATE_FEE, gasLimit: opts.gasLimit ?? CREATE_GAS },
      timeoutTimestampNs: opts.timeoutNs ?? this.nextTimeoutNs(),
    });
  }

  createEscrow(
    signer: PrivateKey,
    amount = 5_000_000_000n,
    modelId = QWEN_MODEL,
    opts: TxOptions = {},
  ): SignedTx {
    const value = encodeMsgCreateDevshardEscrow({ creator: signer.address, amount, modelId });
    return this.sign(signer, [{ typeUrl: MSG_CREATE_DEVSHARD_ESCROW, value }], opts);
  }

  settle(signer: PrivateKey, msg: MsgSettleDevshardEscrow, opts: TxOptions = {}): SignedTx {
    const value = encodeMsgSettleDevshardEscrow(msg);
    return this.sign(signer, [{ typeUrl: MSG_SETTLE_DEVSHARD_ESCROW, value }], {
      fee: 0n,
      gasLimit: 400_000n,
      ...opts,
    });
  }

  send(signer: PrivateKey, to: string, amount: bigint, opts: TxOptions = {}): SignedTx {
    const value = MsgSend.encode(
      MsgSend.fromPartial({
        fromAddress: signer.address,
        toAddress: to,
        amount: [{ denom: 'ngonka', amount: amount.toString() }],
      }),
    ).finish();
    return this.sign(signer, [{ typeUrl: MSG_SEND, value }], opts);
  }
}

export interface TxResponse {
  code: number;
  codespace: string;
  raw_log: string;
  txhash: string;
  height: string;
  events: Array<{ type: string; attributes: Array<{ key: string; value: string }> }>;
}

export async function broadcast(devnet: Devnet, tx: SignedTx | Uint8Array, mode = 'BROADCAST_MODE_SYNC') {
  const bytes = tx instanceof Uint8Array ? tx : tx.txBytes;
  const res = await fetch(`${devnet.urls.chainRest}/cosmos/tx/v1beta1/txs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tx_bytes: Buffer.from(bytes).toString('base64'), mode }),
  });
  return { status: res.status, txResponse: ((await res.json()) as { tx_response: TxResponse }).tx_response };
}

export async function getTx(
  devnet: Devnet,
  hash: string,
): Promise<{ status: number; txResponse?: TxResponse }> {
  const res = await fetch(`${devnet.urls.chainRest}/cosmos/tx/v1beta1/txs/${hash}`);
  const body = (await res.json()) as { tx_response?: TxResponse };
  return { status: res.status, ...(body.tx_response ? { txResponse: body.tx_response } : {}) };
}

/** Broadcast, expect CheckTx acceptance, produce a block, return the indexed result. */
export async function deliver(devnet: Devnet, tx: SignedTx): Promise<TxResponse> {
  const { txResponse } = await broadcast(devnet, tx);
  if (txResponse.code !== 0) throw new Error(`CheckTx rejected: ${txResponse.raw_log}`);
  devnet.blocks.step();
  const indexed = await getTx(devnet, tx.txHash);
  if (!indexed.txResponse) throw new Error('tx not indexed');
  return indexed.txResponse;
}

export function attribute(tx: TxResponse, type: string, key: string): string | undefined {
  return tx.events.find((e) => e.type === type)?.attributes.find((a) => a.key === key)?.value;
}

export async function createEscrow(
  devnet: Devnet,
  txs: TxFactory,
  creator: DevAccount,
  amount = 5_000_000_000n,
) {
  const tx = await deliver(devnet, txs.createEscrow(creator.key, amount));
  if (tx.code !== 0) throw new Error(`create failed: ${tx.raw_log}`);
  const id = BigInt(attribute(tx, 'devshard_escrow_created', 'escrow_id')!);
  return devnet.chain.escrow(id)!;
}

/** Every address whose balance a test may care about: bank and epoch balance. */
export function snapshot(devnet: Devnet): Record<string, { bank: bigint; epoch: bigint }> {
  const addresses = [
    ...devnet.accounts.map((a) => a.address),
    ...devnet.participants.map((p) => p.address),
    ...MODULE_NAMES.map(moduleAddress),
  ];
  return Object.fromEntries(
    addresses.map((a) => [a, { bank: devnet.chain.balanceOf(a), epoch: devnet.chain.epochBalanceOf(a) }]),
  );
}

export interface SettlementInput {
  nonce: bigint;
  fees: bigint;
  /** Cost per slot; default 0 for every slot. */
  costs?: bigint[];
  /** Slots that sign (one entry each); default all. */
  signSlots?: number[];
  version?: string;
  /** Signs for a slot; default the slot validator's own key. */
  signerFor?: (slot: number, address: string) => PrivateKey;
  hostStats?: DevshardSettlementHostStats[];
}

/** A settlement payload as a gateway builds it (devshard-protocol.md §8.3): all slots, a rest hash, the root, signatures. */
export function buildSettlement(
  devnet: Devnet,
  escrow: EscrowRow,
  input: SettlementInput,
): MsgSettleDevshardEscrow {
  const version = input.version ?? 'v5';
  const hostStats =
    input.hostStats ??
    escrow.slots.map((_, slotId) => ({
      slotId,
      missed: 0,
      invalid: 0,
      cost: input.costs?.[slotId] ?? 0n,
      requiredValidations: 0,
      completedValidations: 0,
    }));
  const restHash = sha256(new TextEncoder().encode(`rest of escrow ${escrow.id}`));
  const stateRoot = settlementStateRoot({ hostStats, fees: input.fees, restHash, tag: version });
  const digest = stateSignatureDigest(stateRoot, escrow.id.toString(), input.nonce);
  const keyOf = (address: string) => devnet.participants.find((p) => p.address === address)!.key;
  const signSlots = input.signSlots ?? escrow.slots.map((_, i) => i);
  return {
    settler: escrow.creator,
    escrowId: escrow.id,
    stateRoot,
    nonce: input.nonce,
    restHash,
    hostStats,
    signatures: signSlots.map((slotId) => ({
      slotId,
      signature: (
        input.signerFor?.(slotId, escrow.slots[slotId]!) ?? keyOf(escrow.slots[slotId]!)
      ).signDigest65(digest),
    })),
    fees: input.fees,
    version,
  };
}

export interface CustomTx {
  messages: Any[];
  unordered?: boolean;
  /** null = unset. */
  timeoutNs?: bigint | null;
  sequence?: bigint;
  /** Key put in signer_infos; default the signer's. */
  pubKey?: Uint8Array;
  fee?: bigint;
  gasLimit?: bigint;
  chainId?: string;
  accountNumber?: bigint;
  signMode?: SignMode;
  memo?: string;
}

/** Hand-assembled tx for the cases buildUnorderedTx cannot express (ordered, no timeout, …). */
export function signCustom(devnet: Devnet, signer: PrivateKey, t: CustomTx): Uint8Array {
  const timeoutNs = t.timeoutNs === undefined ? devnet.blocks.timeNs + NINE_MINUTES_NS : t.timeoutNs;
  const bodyBytes = TxBody.encode(
    TxBody.fromPartial({
      messages: t.messages,
      memo: t.memo ?? '',
      unordered: t.unordered ?? true,
      ...(timeoutNs === null
        ? {}
        : {
            timeoutTimestamp: {
              seconds: timeoutNs / 1_000_000_000n,
              nanos: Number(timeoutNs % 1_000_000_000n),
            },
          }),
    }),
  ).finish();
  const authInfoBytes = AuthInfo.encode(
    AuthInfo.fromPartial({
      signerInfos: [
        {
          publicKey: {
            typeUrl: '/cosmos.crypto.secp256k1.PubKey',
            value: PubKey.encode({ key: t.pubKey ?? signer.publicKey }).finish(),
          },
          modeInfo: { single: { mode: t.signMode ?? SignMode.SIGN_MODE_DIRECT } },
          sequence: t.sequence ?? 0n,
        },
      ],
      fee: {
        amount: [{ denom: 'ngonka', amount: (t.fee ?? CREATE_FEE).toString() }],
        gasLimit: t.gasLimit ?? CREATE_GAS,
      },
    }),
  ).finish();
  const signDoc = SignDoc.encode({
    bodyBytes,
    authInfoBytes,
    chainId: t.chainId ?? devnet.chainId,
    accountNumber: t.accountNumber ?? devnet.chain.account(signer.address)!.accountNumber,
  }).finish();
  const signature = signer.signDigest64(sha256(signDoc));
  return TxRaw.encode(TxRaw.fromPartial({ bodyBytes, authInfoBytes, signatures: [signature] })).finish();
}

/** Replaces the signature of an encoded TxRaw. */
export function withSignature(txBytes: Uint8Array, signature: Uint8Array): Uint8Array {
  const raw = TxRaw.decode(txBytes);
  return TxRaw.encode({ ...raw, signatures: [signature] }).finish();
}
