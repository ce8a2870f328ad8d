// Public surface of @gonka-gateway/devshard: the pure protocol core (encodings, signature recipes,
// prompt hash, session state machine, state root, settlement payload; no I/O, no clock), then the
// host transport, the user-side session and finalize, whose storage, transport and clock are injected.

// Errors.
export { DevshardError, DevshardErrorCode, isDevshardError } from './errors.js';
// Finalize (§8): rounds, signature quorum, the finalize document.
export { type FinalizeDocument, type FinalizeResult, parseFinalizeDocument } from './finalize/document.js';
export type { FinalizeOptions } from './finalize/finalize.js';
export type { SignatureCollectionOptions } from './finalize/signatures.js';
// Hashing (§6).
export { u32be, u64be, utf8 } from './hash/bytes.js';
export {
  composeRestHash,
  EMPTY_HEIGHT_SYNC,
  foldSealedAcc,
  type HeightSyncCommit,
  heightSyncHash,
  inferencesHashV2,
  liveRecordsHash,
  warmKeysHash,
} from './hash/rest-hash.js';
export {
  composeStateRoot,
  encodeStateSignatureContent,
  hostStatsHash,
  SessionPhase,
  settlementStateRoot,
  stateSignatureDigest,
} from './hash/state-root.js';
// JSON wire shapes (§4.3) and exact-integer JSON.
export { decodeBase64, encodeBase64 } from './json/base64.js';
export {
  type JsonValue,
  type JsonWritable,
  parseJsonLossless,
  stringifyJsonLossless,
} from './json/lossless.js';
export {
  type DevshardEvent,
  type DiffWire,
  decodeDevshardEvent,
  decodeDiffWire,
  decodeInferenceRequest,
  decodeLegacyResponse,
  decodePayload,
  decodeSignaturesResponse,
  diffFromWire,
  diffToWire,
  encodeDiffWire,
  encodeInferenceRequest,
  encodeMetaEvent,
  encodePayload,
  encodeReceiptEvent,
  encodeSignaturesResponse,
  type InferenceRequestWire,
  type MetaEvent,
  type PayloadWire,
  type ReceiptEvent,
} from './json/wire.js';
// Prompt hash (§2.5).
export { canonicalizeJson, compareUtf8, formatGoFloat, quoteGoString } from './prompt/canonical-json.js';
export { GoJsonSyntaxError } from './prompt/go-json-parse.js';
export { promptHash } from './prompt/prompt-hash.js';
// Protobuf messages (§3).
export {
  createMessage,
  decodeMessage,
  encodeMessage,
  type MessageSchema,
  type WithUnknown,
} from './proto/codec.js';
export {
  type DecodedTx,
  type DevshardTx,
  DevshardTxSchema,
  decodeTx,
  type EncodedTx,
  encodeTx,
  TX_FIELD_NUMBER,
  type TxKind,
} from './proto/devshard-tx.js';
export { type DecodedDiffTxs, decodeDiffTxs, encodeDiffContent } from './proto/diff-content.js';
export { decodeHostStatsMap, encodeHostStatsMap } from './proto/host-stats-map.js';
export {
  bitmapBytes,
  CONFIRMED_AT_HEIGHT_FIELD,
  encodeInferenceRecord,
  type InferenceRecordProto,
  InferenceRecordProtoSchema,
  STARTED_AT_HEIGHT_FIELD,
} from './proto/inference-record.js';
export {
  type ErrorMissVoteContent,
  ErrorMissVoteContentSchema,
  type ExecutorReceiptContent,
  ExecutorReceiptContentSchema,
  type TimeoutVoteContent,
  TimeoutVoteContentSchema,
} from './proto/signed-contents.js';
export { newMsg, txOf } from './proto/tx-builders.js';
export {
  AckStatus,
  type MsgConfirmStart,
  MsgConfirmStartSchema,
  type MsgErrorMiss,
  MsgErrorMissSchema,
  type MsgFinalizeRound,
  type MsgFinishInference,
  MsgFinishInferenceSchema,
  type MsgForceHeightSyncTurn,
  type MsgHeartbeat,
  MsgHeartbeatSchema,
  type MsgHeightAck,
  MsgHeightAckSchema,
  type MsgRevealSeed,
  type MsgStartInference,
  MsgStartInferenceSchema,
  type MsgTimeoutInference,
  MsgTimeoutInferenceSchema,
  type MsgValidation,
  MsgValidationSchema,
  type MsgValidationVote,
  MsgValidationVoteSchema,
  type SlotVote,
  SyncState,
  type SyncVectorEntry,
  TimeoutReason,
} from './proto/tx-messages.js';
// User-side session (§7): storage contract, the session, its events and errors.
export { type Clock, systemClock } from './session/clock.js';
export type { SessionEvent, TimeoutOutcomeKind } from './session/context.js';
export { DEFAULT_DIFF_WINDOW } from './session/diff-log.js';
export {
  dominantHosts,
  dominantSlotCount,
  type HostRisk,
  isDominant,
} from './session/dominant-hosts.js';
export { isSessionError, SessionError, SessionErrorCode } from './session/errors.js';
export {
  CompletionPendingError,
  type FinalizeGateOptions,
  openInferences,
} from './session/finalize-gate.js';
export type { FlushResult } from './session/flush.js';
export type { RejectReason } from './session/host-tx-check.js';
export type { InferenceHandlers, InferenceInput, InferenceResult } from './session/inference.js';
export { type InferenceCost, inferenceCostOf, recordCost } from './session/inference-cost.js';
export { InMemorySessionStore } from './session/memory-store.js';
export { pendingKey } from './session/pending-queue.js';
export {
  billedResponseHash,
  ServedBytes,
  type ServedCounts,
  type ServedVerdict,
  servedVerdict,
} from './session/served-bytes.js';
export { runtimeVersionFor, sessionRecordFromChain } from './session/session-record.js';
export { DEFAULT_SNAPSHOT_EVERY } from './session/snapshots.js';
export {
  isSessionStoreError,
  type SessionRecord,
  type SessionStore,
  SessionStoreError,
  SessionStoreErrorCode,
  type StoredDiff,
  type StoredPendingTx,
  type StoredSession,
} from './session/store.js';
export {
  type ContractTestApi,
  type SessionStoreContractOptions,
  sessionStoreContract,
} from './session/store-contract.js';
export type { TimeoutKind, TimeoutOutcome } from './session/timeouts.js';
export { UserSession, type UserSessionOptions } from './session/user-session.js';
// Settlement (§8).
export { settlementDocument, settlementDocumentJson, settlementMessage } from './settlement/document.js';
export { buildSettlementPayload, type SettlementPayload } from './settlement/payload.js';
export { hasSettlementQuorum, isHostStateSignature, slotSignatures } from './settlement/signatures.js';
// Signature recipes (§2.4, §11).
// No signDiff here: a diff is signed only by the session's write-ahead path (architecture §2.3).
export { diffSigningBytes, recoverDiffSigner, type SignedDiff, type UnsignedDiff } from './signing/diff.js';
export {
  DOMAIN_ERROR_MISS_VOTE,
  DOMAIN_HEIGHT_ACK,
  DOMAIN_TIMEOUT_VOTE,
  DOMAIN_VALIDATION,
  DOMAIN_VALIDATION_VOTE,
  type PreimageStyle,
} from './signing/domains.js';
export {
  executorReceiptBytes,
  recoverExecutorReceiptSigner,
  signExecutorReceipt,
} from './signing/executor-receipt.js';
export { heightAckBytes, recoverHeightAckSigner, signHeightAck } from './signing/height-ack.js';
export {
  defaultRecover,
  memoizeRecover,
  type RecoverFn,
  recoverPreimageSigner,
  signPreimage,
} from './signing/primitive.js';
export {
  finishProposerBytes,
  recoverFinishProposer,
  recoverValidationProposer,
  recoverValidationVoteProposer,
  signFinish,
  signValidation,
  signValidationVote,
  validationProposerBytes,
  validationVoteProposerBytes,
} from './signing/proposer.js';
export { recoverRequestSigner, requestSignaturePreimage, signRequest } from './signing/request.js';
export { recoverStateSigner, signStateRoot } from './signing/state-signature.js';
export {
  errorMissVoteBytes,
  recoverErrorMissVoter,
  recoverTimeoutVoter,
  signErrorMissVote,
  signTimeoutVote,
  timeoutVoteBytes,
} from './signing/votes.js';
// Session state machine (§5) and root (§6).
export { applyDiff } from './state/apply-diff.js';
export {
  dedupKey,
  isAcceptedMempoolTx,
  MEMPOOL_KINDS,
  orderCandidates,
  txPriority,
} from './state/candidates.js';
export { type ComposeOptions, type ComposeResult, composeDiff, type DroppedTx } from './state/compose.js';
export {
  type ConfigWarning,
  DEFAULT_EXECUTION_TIMEOUT,
  DEFAULT_REFUSAL_TIMEOUT,
  defaultSealGraceNonces,
  type EscrowConfigRow,
  MAX_TOKENS_FLOOR,
  resolveSessionConfig,
  type SessionChainParams,
  voteThresholdFor,
} from './state/config.js';
export {
  type ApplyContext,
  type WarmKeyLookup,
  warmKeyLookupFromBindings,
} from './state/context.js';
export { checkNonceLimit } from './state/diff-checks.js';
export type { ApplyResult, DiffEffects, WarmKeyBinding } from './state/effects.js';
export { escrowRowFromChain } from './state/escrow-row.js';
export { executorSlotFor, MAX_GROUP_SIZE, quorumThreshold } from './state/group.js';
export { type IdLog, idLogFrom, idLogHas, idLogToArray } from './state/id-log.js';
export {
  type CreateSessionInput,
  canonicalEscrowId,
  createSessionState,
  type EscrowRow,
  sessionFromEscrow,
} from './state/init.js';
export { PROFILE_V4, PROFILE_V5, type ProtocolProfile, profileForTag } from './state/profile.js';
export { makeRecord } from './state/record.js';
export { liveHashOf, restHashOf, stateRootOf, withRoot } from './state/root.js';
export type { SealedRecord } from './state/seal.js';
export { decodeStateSnapshot, encodeStateSnapshot, SNAPSHOT_FORMAT_VERSION } from './state/snapshot.js';
export {
  type Group,
  type HeightSyncLog,
  type HostStats,
  type InferenceRecord,
  type InferenceRecordFields,
  InferenceStatus,
  type SessionConfig,
  type SessionState,
  type VoteSigStyle,
  type WorkingState,
} from './state/types.js';
export { chatEvents, classifyLine } from './transport/chat-events.js';
// Host transport (§4): the interface the session talks to, its HTTP implementation, wire codecs.
export {
  HostErrorCode,
  type HostErrorDetails,
  HostTransportError,
  hostErrorCodeForStatus,
  isHostTransportError,
} from './transport/errors.js';
export { ForwardingTransport } from './transport/forwarding-transport.js';
export {
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_LINE_BYTES,
  DEFAULT_TRANSPORT_TIMEOUTS,
  devshardBaseUrl,
  HttpHostTransport,
  type HttpHostTransportOptions,
  type TransportTimeouts,
} from './transport/http-transport.js';
export {
  decodeDiffRecords,
  decodeMempoolResponse,
  decodeVerifyTimeoutRequest,
  decodeVerifyTimeoutResponse,
  encodeDiffRecords,
  encodeMempoolResponse,
  encodeVerifyTimeoutRequest,
  encodeVerifyTimeoutResponse,
} from './transport/route-wire.js';
export { readLines } from './transport/sse-lines.js';
export type {
  CallOptions,
  ChatEvent,
  ChatOptions,
  ChatPurpose,
  ChatStream,
  DiffRecord,
  HostTarget,
  HostTransport,
  VerifyTimeoutRequest,
  VerifyTimeoutResponse,
} from './transport/types.js';
