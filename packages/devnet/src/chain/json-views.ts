// Proto JSON as the chain's REST gateway prints it (chain-and-network.md §3.4): 64-bit integers as
// decimal strings, 32-bit as numbers, bytes as base64, and default values emitted (EmitDefaults).
import { rfc3339Nano, toBase64 } from '../encoding.js';
import { SECP256K1_PUBKEY_TYPE } from './decode-tx.js';
import type { TxEvent, TxResult } from './events.js';
import type { DevnetParams } from './params.js';
import type { IndexedTx } from './state.js';
import type { AccountRecord, EscrowRow } from './stores.js';

export function paramsJson(p: DevnetParams) {
  const e = p.devshardEscrow;
  return {
    epoch_params: {
      epoch_length: p.epoch.epochLength.toString(),
      epoch_shift: p.epoch.epochShift.toString(),
      poc_stage_duration: p.epoch.pocStageDuration.toString(),
      poc_validation_delay: p.epoch.pocValidationDelay.toString(),
      poc_validation_duration: p.epoch.pocValidationDuration.toString(),
      set_new_validators_delay: p.epoch.setNewValidatorsDelay.toString(),
    },
    validation_params: {
      timestamp_expiration: p.validation.timestampExpiration.toString(),
      timestamp_advance: p.validation.timestampAdvance.toString(),
    },
    fee_params: {
      min_gas_price_ngonka: p.fee.minGasPriceNgonka.toString(),
      enabled_fee_groups: [...p.fee.enabledFeeGroups],
      groups: p.fee.groups.map((g) => ({
        name: g.name,
        min_gas_price: g.minGasPrice.toString(),
        msgs: g.typeUrls.map((type_url) => ({ type_url })),
      })),
    },
    transfer_agent_access_params: {
      allowed_transfer_addresses: [...p.transferAgentAccess.allowedTransferAddresses],
    },
    developer_access_params: {
      until_block_height: p.developerAccess.untilBlockHeight.toString(),
      allowed_developer_addresses: [...p.developerAccess.allowedDeveloperAddresses],
    },
    devshard_escrow_params: {
      min_amount: e.minAmount.toString(),
      max_amount: e.maxAmount.toString(),
      max_escrows_per_epoch: Number(e.maxEscrowsPerEpoch),
      group_size: e.groupSize,
      allowed_creator_addresses: [...e.allowedCreatorAddresses],
      token_price: e.tokenPrice.toString(),
      max_nonce: Number(e.maxNonce),
      devshard_requests_enabled: e.devshardRequestsEnabled,
      default_inference_seal_grace_nonces: Number(e.sealGraceNonces),
      default_inference_seal_grace_seconds: Number(e.sealGraceSeconds),
      default_auto_seal_every_n_nonces: Number(e.autoSealEveryNNonces),
      default_seal_grace_nonces: Number(e.sealGraceNonces),
      default_inference_clear_grace_seconds: Number(e.inferenceClearGraceSeconds),
      create_devshard_fee: e.createDevshardFee.toString(),
      fee_per_nonce: e.feePerNonce.toString(),
      refusal_timeout: e.refusalTimeout.toString(),
      execution_timeout: e.executionTimeout.toString(),
      validation_rate: e.validationRate,
      vote_threshold_factor: e.voteThresholdFactor,
      approved_versions: e.approvedVersions.map((v) => ({ ...v })),
      apply_derived_pass_count: e.applyDerivedPassCount,
    },
  };
}

const EMPTY_ESCROW: EscrowRow = {
  id: 0n,
  creator: '',
  amount: 0n,
  slots: [],
  epochIndex: 0n,
  appHash: '',
  settled: false,
  tokenPrice: 0n,
  modelId: '',
  createDevshardFee: 0n,
  feePerNonce: 0n,
  validationRate: 0,
  voteThresholdFactor: 0,
  inferenceSealGraceNonces: 0,
  inferenceSealGraceSeconds: 0,
  autoSealEveryNNonces: 0,
  maxNonce: 0,
  refusalTimeout: 0n,
  executionTimeout: 0n,
};

/** `{escrow, found}`; a missing id gives the default row and found=false, as the query does. */
export function escrowJson(row: EscrowRow | undefined) {
  const r = row ?? EMPTY_ESCROW;
  return {
    escrow: {
      id: r.id.toString(),
      creator: r.creator,
      amount: r.amount.toString(),
      slots: [...r.slots],
      epoch_index: r.epochIndex.toString(),
      app_hash: r.appHash,
      settled: r.settled,
      token_price: r.tokenPrice.toString(),
      model_id: r.modelId,
      create_devshard_fee: r.createDevshardFee.toString(),
      fee_per_nonce: r.feePerNonce.toString(),
      validation_rate: r.validationRate,
      vote_threshold_factor: r.voteThresholdFactor,
      inference_seal_grace_nonces: r.inferenceSealGraceNonces,
      inference_seal_grace_seconds: r.inferenceSealGraceSeconds,
      auto_seal_every_n_nonces: r.autoSealEveryNNonces,
      max_nonce: r.maxNonce,
      refusal_timeout: r.refusalTimeout.toString(),
      execution_timeout: r.executionTimeout.toString(),
    },
    found: row !== undefined,
  };
}

export function accountJson(a: AccountRecord) {
  const base = {
    address: a.address,
    pub_key: a.pubKey ? { '@type': SECP256K1_PUBKEY_TYPE, key: toBase64(a.pubKey) } : null,
    account_number: a.accountNumber.toString(),
    sequence: a.sequence.toString(),
  };
  if (a.moduleName) {
    return {
      account: {
        '@type': '/cosmos.auth.v1beta1.ModuleAccount',
        base_account: base,
        name: a.moduleName,
        permissions: [],
      },
    };
  }
  return { account: { '@type': '/cosmos.auth.v1beta1.BaseAccount', ...base } };
}

export function balancesJson(amount: bigint) {
  return amount === 0n
    ? { balances: [], pagination: { next_key: null, total: '0' } }
    : {
        balances: [{ denom: 'ngonka', amount: amount.toString() }],
        pagination: { next_key: null, total: '1' },
      };
}

const eventsJson = (events: TxEvent[]) =>
  events.map((e) => ({ type: e.type, attributes: e.attributes.map((a) => ({ ...a })) }));

/** tx_response of a broadcast (sync mode: CheckTx result, height 0). */
export function broadcastResponseJson(hash: string, result: TxResult) {
  return {
    tx_response: {
      height: '0',
      txhash: hash,
      codespace: result.codespace,
      code: result.code,
      data: '',
      raw_log: result.rawLog,
      logs: [],
      info: '',
      gas_wanted: result.gasWanted.toString(),
      gas_used: result.gasUsed.toString(),
      tx: null,
      timestamp: '',
      events: [],
    },
  };
}

/** GET /cosmos/tx/v1beta1/txs/{hash}. */
export function indexedTxJson(t: IndexedTx) {
  const tx = {
    body: {
      messages: t.tx.messages.map((m) => ({ '@type': m.typeUrl })),
      memo: t.tx.memo,
      timeout_height: t.tx.timeoutHeight.toString(),
      unordered: t.tx.unordered,
      timeout_timestamp: t.tx.timeoutTimestampNs === null ? null : rfc3339Nano(t.tx.timeoutTimestampNs),
    },
    auth_info: {
      fee: {
        amount: [{ denom: 'ngonka', amount: t.tx.fee.toString() }],
        gas_limit: t.tx.gasLimit.toString(),
      },
    },
    signatures: [toBase64(t.tx.signature)],
  };
  return {
    tx,
    tx_response: {
      height: t.height.toString(),
      txhash: t.hash,
      codespace: t.result.codespace,
      code: t.result.code,
      data: '',
      raw_log: t.result.rawLog,
      logs: [],
      info: '',
      gas_wanted: t.result.gasWanted.toString(),
      gas_used: t.result.gasUsed.toString(),
      tx: { '@type': '/cosmos.tx.v1beta1.Tx', ...tx },
      timestamp: rfc3339Nano(t.timeNs).replace(/\.\d+Z$/, 'Z'),
      events: eventsJson(t.result.events),
    },
  };
}

export function simulateJson(result: TxResult) {
  return {
    gas_info: { gas_wanted: result.gasWanted.toString(), gas_used: result.gasUsed.toString() },
    result: { data: '', log: '', events: eventsJson(result.events), msg_responses: [] },
  };
}

/** grpc-gateway error body. */
export const grpcError = (code: number, message: string) => ({ code, message, details: [] as unknown[] });
