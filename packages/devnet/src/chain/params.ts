// The inference module's parameters as the devnet holds them (chain-and-network.md §3.1), in the
// shapes @gonka-gateway/chain parses them into (declared once there): amounts and counters are
// bigint, uint32 rates are numbers; chain/json-views.ts prints them as the proto JSON does. Defaults follow the
// params code and the v0.2.13 mainnet values, except where a devnet needs otherwise (noted).
import {
  type DevshardEscrowParams,
  type EpochParams,
  type FeeParams,
  MSG_CREATE_DEVSHARD_ESCROW,
  MSG_SETTLE_DEVSHARD_ESCROW,
  type ValidationParams,
} from '@gonka-gateway/chain';

export const MSG_SEND = '/cosmos.bank.v1beta1.MsgSend';
export const MSG_START_INFERENCE = '/inference.inference.MsgStartInference';

/**
 * The devshard escrow params as the devnet stores them: the shape the gateway parses
 * (@gonka-gateway/chain, one definition) plus the field only the devnet writes. The seal-grace
 * nonces go out under both names v0.2.13 writes (§3.1 "Seal-grace names differ").
 */
export interface DevnetEscrowParams extends DevshardEscrowParams {
  /** `default_inference_clear_grace_seconds`, written beside the seal-grace fields by v0.2.13. */
  inferenceClearGraceSeconds: bigint;
}

export interface DevnetParams {
  devshardEscrow: DevnetEscrowParams;
  epoch: EpochParams;
  /** Seconds (int64), §4.5. */
  validation: ValidationParams;
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
      maxEscrowsPerEpoch: 100n,
      groupSize: 16,
      allowedCreatorAddresses: allowedCreators,
      tokenPrice: 1n,
      maxNonce: 1_000_000n,
      devshardRequestsEnabled: true,
      sealGraceNonces: 160n,
      sealGraceSeconds: 3600n,
      autoSealEveryNNonces: 150n,
      inferenceClearGraceSeconds: 3600n,
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
    // fee-exempt network duty for an allowlisted settler (listed nowhere on purpose: an enabled
    // group listing it would price it, chain/fees.ts).
    fee: {
      minGasPriceNgonka: 0n,
      enabledFeeGroups: ['cosmos', 'epoch'],
      groups: [
        { name: 'cosmos', minGasPrice: 10n, typeUrls: [MSG_SEND] },
        {
          name: 'epoch',
          minGasPrice: 1n,
          typeUrls: [
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
