// Public surface of @gonka-gateway/chain: keys and signatures, protobuf helpers, escrow messages,
// transactions (prepare → persist hash → broadcast → outcome), chain/node queries, signed direct
// requests, and the error table.

export { ADDRESS_PREFIX, addressFromPublicKey, decodeAddress, isAddress } from './crypto/address.js';
export { type CurveBackend, loadNativeBackend, nobleBackend } from './crypto/curve-backend.js';
export {
  DEFAULT_PRIVATE_KEY_ENV,
  type KeyFileOptions,
  looksLikePrivateKey,
  privateKeyFromEnv,
  privateKeyFromFile,
  privateKeyFromFileText,
} from './crypto/key-source.js';
export { GONKA_HD_PATH, PrivateKey } from './crypto/private-key.js';
export { recoverAddress } from './crypto/recover.js';
export {
  isValidPrivateKey,
  publicKeyFromPrivate,
  recoverPublicKey,
  SECP256K1_ORDER,
  secp256k1BackendName,
  sha256,
  signDigest64,
  signDigest65,
  verifyDigest64,
} from './crypto/secp256k1.js';
export {
  CHAT_COMPLETIONS_PATH,
  DEFAULT_DIRECT_TIMEOUT_MS,
  type DirectRequestInput,
  type DirectResponse,
  type DirectStream,
  sendDirectRequest,
  streamDirectRequest,
} from './direct/direct-client.js';
export {
  DirectRequestSigner,
  type DirectRequestSignerOptions,
  type SignedDirectRequest,
} from './direct/direct-signer.js';
export {
  type DirectEndpoint,
  discoverDirectEndpoints,
  eligibleEndpoints,
  inferenceBaseUrl,
  parseEndpointOverride,
  pickEndpoint,
  withIdentityDelegate,
} from './direct/endpoint-selection.js';
export { buildDirectHeaders, type DirectHeaderInput, type DirectRequestHeaders } from './direct/headers.js';
export {
  DIRECT_SIGNING_SCHEMES,
  type DirectSigningScheme,
  directRequestMessage,
} from './direct/message.js';
export { directRejectionHint } from './direct/rejection-hints.js';
export { parseSse, type SseEvent } from './direct/sse.js';
export { parseInteger, parseUint64 } from './encoding/integer.js';
export { parseJsonExact } from './encoding/json.js';
export { concat, type ProtoField, ProtoWriter, readFields } from './encoding/proto.js';
export {
  CHAIN_ERRORS,
  ChainError,
  type ChainErrorCode,
  type ChainErrorDetails,
  isChainError,
} from './errors.js';
export {
  type ChainBase,
  type ChainClient,
  type ChainClientOptions,
  createChainClient,
  DEFAULT_HTTP_TIMEOUT_MS,
} from './http/chain-client.js';
export { type AuthAccount, parseAccount, queryAccount } from './query/auth-account.js';
export {
  type Coin,
  parseBalances,
  queryBalance,
  queryBalances,
  querySpendableBalance,
} from './query/bank.js';
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
  confirmationPocPhase,
  type EpochStages,
  type LatestEpoch,
  parseLatestEpoch,
  queryLatestEpoch,
} from './query/epochs.js';
export {
  type DevshardEscrow,
  type EscrowQueryResult,
  parseEscrowResponse,
  queryEscrow,
} from './query/escrow.js';
export type { GetOptions } from './query/get-parsed.js';
export {
  type GovernanceModel,
  parseGovernanceModels,
  queryGovernanceModels,
} from './query/governance-models.js';
export { type NodeIdentity, parseIdentity, queryIdentity } from './query/identity.js';
export { type NodeAccount, parseNodeAccount, queryNodeAccount } from './query/node-account.js';
export { parseNodeInfoChainId, queryChainId } from './query/node-info.js';
export {
  type ApprovedVersion,
  type DevshardEscrowParams,
  type EpochParams,
  type FeeGroup,
  type FeeParams,
  type InferenceParams,
  parseInferenceParams,
  queryInferenceParams,
  type ValidationParams,
} from './query/params.js';
export {
  type Participant,
  type ParticipantsSnapshot,
  parseParticipants,
  queryParticipants,
} from './query/participants.js';
export { parseRfc3339Ns, parseRpcStatus, queryRpcStatus, type RpcStatus } from './query/rpc-status.js';
export {
  authzGrantsByGranterPath,
  MSG_START_INFERENCE_TYPE_URL,
  parseWarmKeyGrants,
  queryWarmKeys,
  type WarmKeyGrantsPage,
} from './query/warm-keys.js';
export { BROADCAST_PATH, type BroadcastResult, broadcastTx } from './tx/broadcast.js';
export {
  type BroadcastAndWaitOptions,
  type BroadcastableTx,
  broadcastAndWait,
} from './tx/broadcast-and-wait.js';
export {
  BASE_DENOM,
  buildUnorderedTx,
  type SignedTx,
  type TxFee,
  type UnorderedTxInput,
} from './tx/build-tx.js';
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
  ESCROW_CREATED_EVENT,
  ESCROW_SETTLED_EVENT,
  type EscrowCreatedEvent,
  type EscrowSettledEvent,
  findEscrowCreatedEvents,
  findEscrowSettledEvents,
  normalizeEvents,
  type TxEvent,
  type TxEventAttribute,
} from './tx/events.js';
export {
  computeTxFee,
  DEFAULT_GAS_PRICE_FLOOR,
  DEFAULT_TX_GAS_LIMIT,
  type FeeInput,
  gasPriceFor,
  isFeeExempt,
  listedInEnabledGroup,
} from './tx/fees.js';
export {
  MSG_SEND,
  msgCreateDevshardEscrow,
  msgPublishPubkey,
  msgSettleDevshardEscrow,
} from './tx/messages.js';
export {
  DEFAULT_POLL_INTERVAL_MS,
  DEFAULT_POLL_TIMEOUT_MS,
  lookupTx,
  type PollOptions,
  type PollProgress,
  pollTx,
  type TxLookup,
} from './tx/poll-tx.js';
export {
  createGonkaRegistry,
  MsgCreateDevshardEscrowType,
  MsgSettleDevshardEscrowType,
} from './tx/registry.js';
export { txHash } from './tx/tx-hash.js';
export type { TxFailed, TxIncluded, TxOutcome, TxUnknown } from './tx/tx-outcome.js';
export { parseTxResponse, type TxResponse } from './tx/tx-response.js';
export {
  type ConnectTxSignerOptions,
  connectTxSigner,
  type PreparedTx,
  type PrepareOptions,
  TxSigner,
  type TxSignerOptions,
  UNORDERED_TX_TTL_NS,
} from './tx/tx-signer.js';
export { systemClockNs } from './wall-clock.js';
