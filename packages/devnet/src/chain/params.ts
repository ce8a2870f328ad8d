// The inference module's parameters as the devnet holds them (chain-and-network.md §3.1). Amounts
// and 64-bit integers are bigint; uint32 fields are numbers, as in the proto. Defaults follow the
// params code and the v0.2.13 mainnet values, except where a devnet needs otherwise (noted).
import { MSG_CREATE_DEVSHARD_ESCROW, MSG_SETTLE_DEVSHARD_ESCROW } from '@gonka-gateway/chain';

export const MSG_SEND = '/cosmos.bank.v1beta1.MsgSend';
export const MSG_START_INFERENCE = '/inference.inference.MsgStartInference';

export interface ApprovedVersion {
  name: string;
  binary: string;
  sha256: string;
}

export interface DevshardEscrowParams {
  minAmount: bigint;
  maxAmount: bigint;
  maxEscrowsPerEpoch: number;
  groupSize: number;
  allowedCreatorAddresses: string[];
  tokenPrice: bigint;
  maxNonce: number;
  devshardRequestsEnabled: boolean;
  defaultInferenceSealGraceNonces: number;
  defaultInferenceSealGraceSeconds: number;
  defaultAutoSealEveryNNonces: number;
  /** v0.2.13 writes these two beside the names above (§3.1 "Seal-grace names differ"). */
  defaultSealGraceNonces: number;
  defaultInferenceClearGraceSeconds: number;
  createDevshardFee: bigint;
  feePerNonce: bigint;
  refusalTimeout: bigint;
  executionTimeout: bigint;
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
  /** ngonka per gas unit. */
  minGasPrice: bigint;
  msgTypeUrls: string[];
}

export interface FeeParams {
  minGasPriceNgonka: bigint;
  enabledFeeGroups: string[];
  groups: FeeGroup[];
}

export interface DevnetParams {
  devshardEscrow: DevshardEscrowParams;
  epoch: EpochParams;
  /** Seconds (int64), §4.5. */
  validation: { timestampExpiration: bigint; timestampAdvance: bigint };
  fee: FeeParams;
  transferAgentAccess: { allowedTransferAddresses: string[] };
  developerAccess: { untilBlockHeight: bigint; allowedDeveloperAddresses: string[] };
}

export function defaultEpochParams(): EpochParams {
  // A devnet epoch is short (200 blocks) so tests and the demo see epoch switches; PoC takes the
  // 20 blocks before set_new_validators (§3.3 formula).
  return {
    epochLength: 200n,
    epochShift: 0n,
    pocStageDuration: 10n,
    pocValidationDelay: 2n,
    pocValidationDuration: 6n,
    setNewValidatorsDelay: 2n,
  };
}

export function defaultParams(allowedCreators: string[]): DevnetParams {
  return {
    devshardEscrow: {
      minAmount: 5_000_000_000n,
      maxAmount: 10_000_000_000n,
      maxEscrowsPerEpoch: 100,
      groupSize: 16,
      allowedCreatorAddresses: allowedCreators,
      tokenPrice: 1n,
      maxNonce: 1_000_000,
      devshardRequestsEnabled: true,
      defaultInferenceSealGraceNonces: 160,
      defaultInferenceSealGraceSeconds: 3600,
      defaultAutoSealEveryNNonces: 150,
      defaultSealGraceNonces: 160,
      defaultInferenceClearGraceSeconds: 3600,
      createDevshardFee: 10_000n,
      feePerNonce: 1_000n,
      refusalTimeout: 60n,
      executionTimeout: 1920n,
      validationRate: 1000,
      voteThresholdFactor: 50,
      approvedVersions: [
        { name: 'v5', binary: '', sha256: '' },
        { name: 'v4', binary: '', sha256: '' },
      ],
      applyDerivedPassCount: false,
    },
    epoch: defaultEpochParams(),
    validation: { timestampExpiration: 60n, timestampAdvance: 30n },
    // §2.3: MsgSend is in the `cosmos` group; MsgCreateDevshardEscrow is in no group and so pays the
    // highest enabled price (10 ngonka/gas, the host documentation's --gas-prices). Settlement is a
    // fee-exempt network duty for an allowlisted settler (listed nowhere on purpose).
    fee: {
      minGasPriceNgonka: 0n,
      enabledFeeGroups: ['cosmos', 'epoch'],
      groups: [
        { name: 'cosmos', minGasPrice: 10n, msgTypeUrls: [MSG_SEND] },
        {
          name: 'epoch',
          minGasPrice: 1n,
          msgTypeUrls: [
            '/inference.inference.MsgSubmitHardwareDiff',
            '/inference.inference.MsgPoCV2StoreCommit',
          ],
        },
      ],
    },
    transferAgentAccess: { allowedTransferAddresses: [] },
    developerAccess: { untilBlockHeight: 0n, allowedDeveloperAddresses: [] },
  };
}

/** Message types the devnet chain executes; anything else is rejected at decode. */
export const KNOWN_MESSAGES = [MSG_SEND, MSG_CREATE_DEVSHARD_ESCROW, MSG_SETTLE_DEVSHARD_ESCROW] as const;
export type KnownMessageType = (typeof KNOWN_MESSAGES)[number];
