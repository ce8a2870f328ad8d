// The './session' face of @gonka-gateway/devshard: what a process that runs user-side sessions needs
// (devshard-protocol.md §7–§8): UserSession and its options, the SessionStore contract it writes
// through, clock, events and errors, and the host transport (§4) it talks to. Storage, transport and
// clock are injected; the protocol core is the package root.

// Wire (§4.3) as the user side writes requests and reads answers.
export {
  type DevshardEvent,
  decodeDevshardEvent,
  decodeLegacyResponse,
  decodeSignaturesResponse,
  encodeInferenceRequest,
  encodePayload,
} from './json/wire.js';
// Which approved runtime a new escrow binds to, and why none can be (§1, §12 #2).
export {
  describeProtocolVersions,
  runtimeVersionFor,
  SUPPORTED_PROTOCOL_VERSIONS,
  type SupportedProtocolVersion,
  supportedLineOf,
  unservableVersionReason,
  unsupportedProtocolReason,
} from './protocol-versions.js';
// The user-side session (§7): the session, its store contract, clock, events and errors; finalize (§8).
export { DEFAULT_DIFF_WINDOW } from './session/diff-log.js';
export { dominantHosts, dominantSlotCount, type HostRisk, isDominant } from './session/dominant-hosts.js';
export {
  FundingError,
  isFundingError,
  isSessionError,
  SessionError,
  SessionErrorCode,
} from './session/errors.js';
export type { FinalizeOptions } from './session/finalize.js';
export { CompletionPendingError, type FinalizeGateOptions, openInferences } from './session/finalize-gate.js';
export type { FlushResult } from './session/flush.js';
export type { RejectReason } from './session/host-tx-check.js';
export {
  InferenceCut,
  type InferenceHandlers,
  type InferenceInput,
  type InferenceResult,
} from './session/inference.js';
export { type InferenceCost, inferenceCostOf, recordCost, reservedTotal } from './session/inference-cost.js';
export { InMemorySessionStore } from './session/memory-store.js';
export { pendingKey } from './session/pending-queue.js';
export {
  billedResponseHash,
  ServedBytes,
  type ServedCounts,
  type ServedVerdict,
  servedVerdict,
} from './session/served-bytes.js';
export { type Clock, systemClock } from './session/session-clock.js';
export type { SessionEvent, TimeoutOutcomeKind } from './session/session-context.js';
export { escrowMaxNonce, sessionRecordFromChain } from './session/session-record.js';
export type { SignatureCollectionOptions } from './session/signature-collection.js';
export { DEFAULT_SNAPSHOT_EVERY } from './session/snapshots.js';
export {
  firstOfConsecutive,
  isSessionStoreError,
  type SessionRecord,
  type SessionStore,
  SessionStoreError,
  SessionStoreErrorCode,
  type SessionWrites,
  type StoredDiff,
  type StoredHostProgress,
  type StoredPendingTx,
  type StoredSession,
  type StoredSignatures,
} from './session/store.js';
export type { TimeoutKind, TimeoutOutcome } from './session/timeouts.js';
export { UserSession, type UserSessionOptions } from './session/user-session.js';
// Host transport (§4): the interface a session talks to, its HTTP implementation, chat events.
export { chatEvents, classifyLine } from './transport/chat-events.js';
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
