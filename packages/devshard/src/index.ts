// Public face of @gonka-gateway/devshard, the pure protocol core (devshard-protocol.md): encodings,
// signature recipes, prompt hash, the session state machine and its root, the settlement payload and
// document. No I/O, no clock. Three more faces, one per audience: './session' for processes that run
// user sessions (the session, its store contract, the host transport), './host' for a host
// implementation (request decoding, answer encoding, a host's own signatures), './testing'.

// Errors (codes, not message text).
export { DevshardError, DevshardErrorCode, isDevshardError } from './errors.js';
// Hashing (§6): the state-root formula, rest_hash parts, the state-signature preimage.
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
} from './hash/root-formula.js';
// JSON: exact integers (§4.3) and the wire shapes both sides use.
export { decodeBase64, encodeBase64 } from './json/base64.js';
export {
  type JsonValue,
  type JsonWritable,
  parseJsonLossless,
  stringifyJsonLossless,
} from './json/lossless.js';
export {
  type DiffWire,
  decodeDiffWire,
  diffFromWire,
  diffToWire,
  encodeDiffWire,
  type InferenceRequestWire,
  type PayloadWire,
} from './json/wire.js';
// Prompt hash (§2.5).
export { canonicalizeJson, compareUtf8, formatGoFloat, quoteGoString } from './prompt/canonical-json.js';
export { GoJsonSyntaxError } from './prompt/go-json-parse.js';
export { promptHash } from './prompt/prompt-hash.js';
// Protobuf messages (§3): the codec, the devshard tx, diff content, records, signed contents.
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
export { type DecodedDiffTxs, decodeDiffTxs, diffTxsBlob, encodeDiffContent } from './proto/diff-content.js';
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
// Settlement (§8.2–§8.3): payload, slot quorum, the finalize document.
export {
  type FinalizeDocument,
  type FinalizeResult,
  parseFinalizeDocument,
  settlementDocument,
  settlementDocumentJson,
  settlementMessage,
} from './settlement/document.js';
export { buildSettlementPayload, type SettlementPayload } from './settlement/payload.js';
export { hasSettlementQuorum, isHostStateSignature, slotSignatures } from './settlement/quorum.js';
// Signature recipes (§2.4, §11): preimages and signer recovery; a host's own signers are in
// ./host. No signDiff: a diff is signed only by the session's write-ahead path (architecture §2.3).
export { diffSigningBytes, recoverDiffSigner, type SignedDiff, type UnsignedDiff } from './signing/diff.js';
export {
  DOMAIN_ERROR_MISS_VOTE,
  DOMAIN_HEIGHT_ACK,
  DOMAIN_TIMEOUT_VOTE,
  DOMAIN_VALIDATION,
  DOMAIN_VALIDATION_VOTE,
  type PreimageStyle,
} from './signing/domains.js';
export { executorReceiptBytes, recoverExecutorReceiptSigner } from './signing/executor-receipt.js';
export { heightAckBytes, recoverHeightAckSigner } from './signing/height-ack.js';
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
  validationProposerBytes,
  validationVoteProposerBytes,
} from './signing/proposer.js';
export { recoverRequestSigner, requestSignaturePreimage, signRequest } from './signing/request.js';
export { recoverStateSigner } from './signing/state-signature.js';
export {
  errorMissVoteBytes,
  recoverErrorMissVoter,
  recoverTimeoutVoter,
  timeoutVoteBytes,
} from './signing/votes.js';
// Session state machine (§5) and state root (§6).
export { type ApplyContext, type WarmKeyLookup, warmKeyLookupFromBindings } from './state/apply-context.js';
export { applyDiff } from './state/apply-diff.js';
export {
  dedupKey,
  dedupKeys,
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
