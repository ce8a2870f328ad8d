// Public surface of @gonka-gateway/chain: only what other packages import. Chain's own code and tests
// import by relative path, so a name that nothing outside uses stays in its module.

// Keys and signing.
export { addressFromPublicKey, isAddress } from './crypto/address.js';
export { loadNativeBackend, nobleBackend } from './crypto/curve-backend.js';
export {
  DEFAULT_PRIVATE_KEY_ENV,
  looksLikePrivateKey,
  privateKeyFromEnv,
  privateKeyFromFile,
} from './crypto/key-source.js';
export { PrivateKey } from './crypto/private-key.js';
export { recoverAddress } from './crypto/recover.js';
export {
  recoverPublicKey,
  SECP256K1_ORDER,
  secp256k1BackendName,
  sha256,
  verifyDigest64,
} from './crypto/secp256k1.js';
// Direct requests to hosts: signing, endpoint choice, sending.
export { CHAT_COMPLETIONS_PATH, sendDirectRequest, streamDirectRequest } from './direct/direct-client.js';
export { DirectRequestSigner } from './direct/direct-signer.js';
export {
  type DirectEndpoint,
  discoverDirectEndpoints,
  inferenceBaseUrl,
  parseEndpointOverride,
  pickEndpoint,
} from './direct/endpoint-selection.js';
export {
  DIRECT_SIGNING_SCHEMES,
  type DirectSigningScheme,
  directRequestMessage,
} from './direct/message.js';
// Encoding helpers: exact integers, protobuf fields.
export { parseUint64 } from './encoding/integer.js';
export { concat, ProtoWriter, readFields } from './encoding/proto.js';
// Errors.
export { ChainError, type ChainErrorCode, isChainError } from './errors.js';
// Queries: the chain client, chain and node state, epoch schedule.
export { type ChainClient, createChainClient } from './http/chain-client.js';
export { queryAccount } from './query/auth-account.js';
export { queryBalance, queryBalances, querySpendableBalance } from './query/bank.js';
export {
  blocksUntilEpochSwitch,
  effectiveEpochIndex,
  epochStagesFromParams,
  epochSwitchHeight,
  isPocActive,
} from './query/epoch-schedule.js';
export {
  CONFIRMATION_POC_PHASES,
  type ConfirmationPocPhase,
  type LatestEpoch,
  parseLatestEpoch,
  queryLatestEpoch,
} from './query/epochs.js';
export { type DevshardEscrow, queryEscrow } from './query/escrow.js';
export { queryGovernanceModels } from './query/governance-models.js';
export { queryIdentity } from './query/identity.js';
export { queryNodeAccount } from './query/node-account.js';
export { queryChainId } from './query/node-info.js';
export {
  type DevshardEscrowParams,
  type EpochParams,
  type FeeParams,
  type InferenceParams,
  parseInferenceParams,
  queryInferenceParams,
  type ValidationParams,
} from './query/params.js';
export { queryParticipants } from './query/participants.js';
export { queryRpcStatus } from './query/rpc-status.js';
export { queryWarmKeys } from './query/warm-keys.js';
// Transactions: escrow messages, fees, prepare → persist hash → broadcast → outcome.
export type { BroadcastResult } from './tx/broadcast.js';
export { broadcastAndWait } from './tx/broadcast-and-wait.js';
export { BASE_DENOM, buildUnorderedTx, type SignedTx } from './tx/build-tx.js';
export {
  type DevshardSettlementHostStats,
  type DevshardSlotSignature,
  decodeHostStats,
  decodeMsgCreateDevshardEscrow,
  decodeMsgSettleDevshardEscrow,
  encodeHostStats,
  encodeMsgCreateDevshardEscrow,
  encodeMsgSettleDevshardEscrow,
  MSG_CREATE_DEVSHARD_ESCROW,
  MSG_SETTLE_DEVSHARD_ESCROW,
  type MsgCreateDevshardEscrow,
  type MsgSettleDevshardEscrow,
} from './tx/escrow-messages.js';
export {
  type EscrowSettledEvent,
  findEscrowCreatedEvents,
  findEscrowSettledEvents,
  type TxEvent,
} from './tx/events.js';
export { computeTxFee, DEFAULT_GAS_PRICE_FLOOR, DEFAULT_TX_GAS_LIMIT } from './tx/fees.js';
export { lookupTx, pollTx } from './tx/poll-tx.js';
export { createGonkaRegistry } from './tx/registry.js';
export { txHash } from './tx/tx-hash.js';
export type { TxFailed, TxIncluded, TxOutcome, TxUnknown } from './tx/tx-outcome.js';
export { connectTxSigner, type PreparedTx, TxSigner } from './tx/tx-signer.js';
