// Inference module params (chain-and-network.md §3.1; gateway-spec.md §2.3). Only the sub-objects the
// gateway uses are typed; the full document stays available as `raw`. A missing field is its proto3
// zero value, not the params default: proto JSON omits zero values, so absence means zero.
import type { ChainClient } from '../http/chain-client.js';
import { type GetOptions, getParsed } from './get-parsed.js';
import {
  asObject,
  bool,
  int,
  type JsonObject,
  objList,
  optObject,
  reqObject,
  str,
  strList,
  u32,
} from './json-fields.js';

export const INFERENCE_PARAMS_PATH = '/productscience/inference/inference/params';

export interface ApprovedVersion {
  name: string;
  binary: string;
  sha256: string;
}

export interface DevshardEscrowParams {
  minAmount: bigint;
  maxAmount: bigint;
  maxEscrowsPerEpoch: bigint;
  groupSize: number;
  /** Empty means anyone may create escrows (§2.6 rule 1). */
  allowedCreatorAddresses: string[];
  tokenPrice: bigint;
  maxNonce: bigint;
  devshardRequestsEnabled: boolean;
  /** `default_inference_seal_grace_nonces`, or `default_seal_grace_nonces` in other revisions. */
  sealGraceNonces: bigint;
  sealGraceSeconds: bigint;
  autoSealEveryNNonces: bigint;
  createDevshardFee: bigint;
  feePerNonce: bigint;
  /** Seconds. */
  refusalTimeout: bigint;
  /** Seconds. */
  executionTimeout: bigint;
  /** Basis points, ≤ 10000. */
  validationRate: number;
  voteThresholdFactor: number;
  approvedVersions: ApprovedVersion[];
  applyDerivedPassCount: boolean;
}

export interface EpochParams {
  epochLength: bigint;
  epochShift: bigint;
  pocStageDuration: bigint;
  pocValidationDelay: bigint;
  pocValidationDuration: bigint;
  setNewValidatorsDelay: bigint;
}

export interface FeeGroup {
  name: string;
  /** ngonka per gas. */
  minGasPrice: bigint;
  /** Message type URLs in this group. */
  typeUrls: string[];
}

/** `params.fee_params` (§2.3); null on chains before v0.2.12. */
export interface FeeParams {
  minGasPriceNgonka: bigint;
  enabledFeeGroups: string[];
  groups: FeeGroup[];
}

export interface ValidationParams {
  /** Seconds a direct-request timestamp may lag the latest block time (§4.5). */
  timestampExpiration: bigint;
  /** Seconds a direct-request timestamp may lead the latest block time. */
  timestampAdvance: bigint;
}

export interface InferenceParams {
  devshardEscrow: DevshardEscrowParams;
  epoch: EpochParams;
  fee: FeeParams | null;
  validation: ValidationParams;
  /** Empty = no transfer-agent allowlist (§4.1 step 2). */
  allowedTransferAddresses: string[];
  developerAccess: { untilBlockHeight: bigint; allowedDeveloperAddresses: string[] };
  /** The `params` object as received, for fields not typed here. */
  raw: JsonObject;
}

const EMPTY: JsonObject = {};

export function parseDevshardEscrowParams(o: JsonObject, p: string): DevshardEscrowParams {
  const graceKey =
    o.default_inference_seal_grace_nonces !== undefined
      ? 'default_inference_seal_grace_nonces'
      : 'default_seal_grace_nonces';
  return {
    minAmount: int(o, 'min_amount', p),
    maxAmount: int(o, 'max_amount', p),
    maxEscrowsPerEpoch: int(o, 'max_escrows_per_epoch', p),
    groupSize: u32(o, 'group_size', p),
    allowedCreatorAddresses: strList(o, 'allowed_creator_addresses', p),
    tokenPrice: int(o, 'token_price', p),
    maxNonce: int(o, 'max_nonce', p),
    devshardRequestsEnabled: bool(o, 'devshard_requests_enabled', p),
    sealGraceNonces: int(o, graceKey, p),
    sealGraceSeconds: int(o, 'default_inference_seal_grace_seconds', p),
    autoSealEveryNNonces: int(o, 'default_auto_seal_every_n_nonces', p),
    createDevshardFee: int(o, 'create_devshard_fee', p),
    feePerNonce: int(o, 'fee_per_nonce', p),
    refusalTimeout: int(o, 'refusal_timeout', p),
    executionTimeout: int(o, 'execution_timeout', p),
    validationRate: u32(o, 'validation_rate', p),
    voteThresholdFactor: u32(o, 'vote_threshold_factor', p),
    approvedVersions: objList(o, 'approved_versions', p).map(([v, vp]) => ({
      name: str(v, 'name', vp),
      binary: str(v, 'binary', vp),
      sha256: str(v, 'sha256', vp),
    })),
    applyDerivedPassCount: bool(o, 'apply_derived_pass_count', p),
  };
}

export function parseFeeParams(o: JsonObject, p: string): FeeParams {
  return {
    minGasPriceNgonka: int(o, 'min_gas_price_ngonka', p),
    enabledFeeGroups: strList(o, 'enabled_fee_groups', p),
    groups: objList(o, 'groups', p).map(([g, gp]) => ({
      name: str(g, 'name', gp),
      minGasPrice: int(g, 'min_gas_price', gp),
      typeUrls: objList(g, 'msgs', gp).map(([m, mp]) => str(m, 'type_url', mp)),
    })),
  };
}

export function parseInferenceParams(json: unknown): InferenceParams {
  const params = reqObject(asObject(json, ''), 'params', '');
  const p = 'params';
  const escrow = optObject(params, 'devshard_escrow_params', p) ?? EMPTY;
  const epoch = optObject(params, 'epoch_params', p) ?? EMPTY;
  const fee = optObject(params, 'fee_params', p);
  const validation = optObject(params, 'validation_params', p) ?? EMPTY;
  const transfer = optObject(params, 'transfer_agent_access_params', p) ?? EMPTY;
  const developer = optObject(params, 'developer_access_params', p) ?? EMPTY;
  const ep = `${p}.epoch_params`;
  return {
    devshardEscrow: parseDevshardEscrowParams(escrow, `${p}.devshard_escrow_params`),
    epoch: {
      epochLength: int(epoch, 'epoch_length', ep),
      epochShift: int(epoch, 'epoch_shift', ep),
      pocStageDuration: int(epoch, 'poc_stage_duration', ep),
      pocValidationDelay: int(epoch, 'poc_validation_delay', ep),
      pocValidationDuration: int(epoch, 'poc_validation_duration', ep),
      setNewValidatorsDelay: int(epoch, 'set_new_validators_delay', ep),
    },
    fee: fee ? parseFeeParams(fee, `${p}.fee_params`) : null,
    validation: {
      timestampExpiration: int(validation, 'timestamp_expiration', `${p}.validation_params`),
      timestampAdvance: int(validation, 'timestamp_advance', `${p}.validation_params`),
    },
    allowedTransferAddresses: strList(
      transfer,
      'allowed_transfer_addresses',
      `${p}.transfer_agent_access_params`,
    ),
    developerAccess: {
      untilBlockHeight: int(developer, 'until_block_height', `${p}.developer_access_params`),
      allowedDeveloperAddresses: strList(
        developer,
        'allowed_developer_addresses',
        `${p}.developer_access_params`,
      ),
    },
    raw: params,
  };
}

export function queryInferenceParams(client: ChainClient, options?: GetOptions): Promise<InferenceParams> {
  return getParsed(client, 'chainRest', INFERENCE_PARAMS_PATH, parseInferenceParams, options);
}
