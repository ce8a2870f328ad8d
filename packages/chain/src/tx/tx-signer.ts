// Signs unordered transactions for one key (chain-and-network.md §2.2). The signer owns the
// per-process monotonic timeout clock: every unordered tx of an account needs a distinct
// timeout_timestamp, so use ONE TxSigner per key per process.
//
// The API separates preparing from sending so the caller can persist the tx hash (and bytes) before
// anything leaves the process (§2.4): `prepare*()` returns a signed PreparedTx, then
// `broadcastAndWait(client, prepared)` sends it.
import type { EncodeObject, Registry } from '@cosmjs/proto-signing';
import type { PrivateKey } from '../crypto/private-key.js';
import { ChainError } from '../errors.js';
import type { ChainClient } from '../http/chain-client.js';
import { queryAccount } from '../query/auth-account.js';
import { queryChainId } from '../query/node-info.js';
import type { FeeParams } from '../query/params.js';
import { systemClockNs } from '../wall-clock.js';
import { buildUnorderedTx, type SignedTx, type TxFee } from './build-tx.js';
import type { MsgSettleDevshardEscrow } from './escrow-messages.js';
import { computeTxFee, DEFAULT_GAS_PRICE_FLOOR, DEFAULT_TX_GAS_LIMIT } from './fees.js';
import { msgCreateDevshardEscrow, msgPublishPubkey, msgSettleDevshardEscrow } from './messages.js';
import { createGonkaRegistry } from './registry.js';

/** now + 9 min: under the SDK's default 10-minute maximum (§2.2), with a minute for clock skew. */
export const UNORDERED_TX_TTL_NS = 9n * 60n * 1_000_000_000n;

export interface TxSignerOptions {
  key: PrivateKey;
  chainId: string;
  accountNumber: bigint;
  /** DEVSHARD_TX_GAS_LIMIT; default 700000. */
  gasLimit?: bigint;
  /** ngonka per gas never undercut (§2.3); default 10. */
  gasPriceFloor?: bigint;
  /** Wall clock in ns; injectable for tests. */
  nowNs?: () => bigint;
  registry?: Registry;
}

export interface PreparedTx extends SignedTx {
  signer: string;
  typeUrls: string[];
  fee: TxFee;
  /** After a block with a later time the tx can no longer be included (§2.4 "Keep a not-found hash"). */
  timeoutTimestampNs: bigint;
  chainId: string;
  accountNumber: bigint;
}

export interface PrepareOptions {
  memo?: string;
  gasLimit?: bigint;
  /** Pay a fee even for a fee-exempt tx (settlement), should a chain refuse it with code 13. */
  payExempt?: boolean;
}

export class TxSigner {
  readonly address: string;
  readonly chainId: string;
  readonly accountNumber: bigint;
  readonly gasLimit: bigint;
  readonly gasPriceFloor: bigint;
  readonly #key: PrivateKey;
  readonly #now: () => bigint;
  readonly #registry: Registry;
  #lastTimeoutNs = 0n;

  constructor(options: TxSignerOptions) {
    if (options.chainId.trim() === '')
      throw new ChainError('CHAIN_ERR_INVALID_ARGUMENT', { detail: 'chain id is empty' });
    if (options.accountNumber < 0n) {
      throw new ChainError('CHAIN_ERR_INVALID_ARGUMENT', { detail: 'account number must not be negative' });
    }
    this.#key = options.key;
    this.address = options.key.address;
    this.chainId = options.chainId;
    this.accountNumber = options.accountNumber;
    this.gasLimit = options.gasLimit ?? DEFAULT_TX_GAS_LIMIT;
    this.gasPriceFloor = options.gasPriceFloor ?? DEFAULT_GAS_PRICE_FLOOR;
    this.#now = options.nowNs ?? systemClockNs;
    this.#registry = options.registry ?? createGonkaRegistry();
  }

  /** `max(now + 9 min, last + 1 ns)` (§2.2): strictly increasing for this signer. */
  nextTimeoutTimestampNs(): bigint {
    const candidate = this.#now() + UNORDERED_TX_TTL_NS;
    this.#lastTimeoutNs = candidate > this.#lastTimeoutNs ? candidate : this.#lastTimeoutNs + 1n;
    return this.#lastTimeoutNs;
  }

  /** Signs `messages` with a fee from `feeParams` (null = no fee params on chain: floor only). */
  prepare(
    messages: readonly EncodeObject[],
    feeParams: FeeParams | null,
    options: PrepareOptions = {},
  ): PreparedTx {
    if (messages.length === 0)
      throw new ChainError('CHAIN_ERR_INVALID_ARGUMENT', { detail: 'a tx needs a message' });
    const typeUrls = messages.map((m) => m.typeUrl);
    const fee = computeTxFee({
      typeUrls,
      feeParams,
      gasLimit: options.gasLimit ?? this.gasLimit,
      gasPriceFloor: this.gasPriceFloor,
      ...(options.payExempt ? { payExempt: true } : {}),
    });
    const timeoutTimestampNs = this.nextTimeoutTimestampNs();
    const signed = buildUnorderedTx({
      signer: this.#key,
      messages: messages.map((m) => this.#registry.encodeAsAny(m)),
      chainId: this.chainId,
      accountNumber: this.accountNumber,
      fee,
      timeoutTimestampNs,
      memo: options.memo,
    });
    return {
      ...signed,
      signer: this.address,
      typeUrls,
      fee,
      timeoutTimestampNs,
      chainId: this.chainId,
      accountNumber: this.accountNumber,
    };
  }

  prepareCreateEscrow(input: { amount: bigint; modelId: string }, feeParams: FeeParams | null): PreparedTx {
    return this.prepare([msgCreateDevshardEscrow({ creator: this.address, ...input })], feeParams);
  }

  /** The settler is always this signer: the keeper requires settler == creator (§2.6 Settle 1). */
  prepareSettleEscrow(
    settlement: Omit<MsgSettleDevshardEscrow, 'settler'>,
    feeParams: FeeParams | null,
    options: PrepareOptions = {},
  ): PreparedTx {
    return this.prepare(
      [msgSettleDevshardEscrow({ ...settlement, settler: this.address })],
      feeParams,
      options,
    );
  }

  /** 1 ngonka to self, which records the pubkey on chain (§5). */
  preparePublishPubkey(feeParams: FeeParams | null): PreparedTx {
    return this.prepare([msgPublishPubkey(this.address)], feeParams);
  }
}

export interface ConnectTxSignerOptions extends Omit<TxSignerOptions, 'key' | 'chainId' | 'accountNumber'> {
  /** Skip the node_info query when the chain id is configured (CHAIN_ID). */
  chainId?: string;
  signal?: AbortSignal;
}

/** A TxSigner with the chain id and account number read live. The account must exist (be funded). */
export async function connectTxSigner(
  client: ChainClient,
  key: PrivateKey,
  options: ConnectTxSignerOptions = {},
): Promise<TxSigner> {
  const { chainId: configured, signal, ...rest } = options;
  const [chainId, account] = await Promise.all([
    configured ?? queryChainId(client, { signal }),
    queryAccount(client, key.address, { signal }),
  ]);
  if (!account) {
    throw new ChainError('CHAIN_ERR_NOT_FOUND', {
      detail: `account ${key.address} does not exist on chain`,
      hint: 'fund the address first; an account exists once it has received ngonka',
    });
  }
  return new TxSigner({ ...rest, key, chainId, accountNumber: account.accountNumber });
}
