// Public face of @gonka-gateway/devshard, the pure protocol core (devshard-protocol.md): encodings,
// signature recipes, prompt hash, the session state machine and its root, the settlement payload and
// document. No I/O, no clock. Three more faces, one per audience: './session' for processes that run
// user sessions (the session, its store contract, the host transport), './host' for a host
// implementation (request decoding, answer encoding, a host's own signatures), './testing'. This face
// lists only what other packages import; the package's own code imports by relative path.

// Errors (codes, not message text).
export { DevshardError, DevshardErrorCode, isDevshardError } from './errors.js';
// Hashing (§6): the settlement state root, the state-signature digest.
export { u64be } from './hash/bytes.js';
export { SessionPhase, settlementStateRoot, stateSignatureDigest } from './hash/root-formula.js';
// JSON: exact integers (§4.3) and the wire shapes both sides use.
export { decodeBase64, encodeBase64 } from './json/base64.js';
export { type JsonValue, parseJsonLossless, stringifyJsonLossless } from './json/lossless.js';
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
export { promptHash } from './prompt/prompt-hash.js';
// Protobuf messages (§3): the devshard tx, diff content, message builders.
export { type DecodedTx, type DevshardTx, decodeTx, type EncodedTx } from './proto/devshard-tx.js';
export { diffTxsBlob } from './proto/diff-content.js';
export { newMsg, txOf } from './proto/tx-builders.js';
export { type MsgStartInference, TimeoutReason } from './proto/tx-messages.js';
// Settlement (§8.2–§8.3): payload, slot quorum, the finalize document and message.
export { type FinalizeResult, parseFinalizeDocument, settlementMessage } from './settlement/document.js';
export { buildSettlementPayload } from './settlement/payload.js';
export { hasSettlementQuorum, isHostStateSignature, slotSignatures } from './settlement/quorum.js';
// Signature recipes (§2.4, §11): preimages and signer recovery; a host's own signers are in
// ./host. No signDiff: a diff is signed only by the session's write-ahead path (architecture §2.3).
export { diffSigningBytes, type SignedDiff, type UnsignedDiff } from './signing/diff.js';
export { executorReceiptBytes, recoverExecutorReceiptSigner } from './signing/executor-receipt.js';
export { defaultRecover, memoizeRecover, type RecoverFn, signPreimage } from './signing/primitive.js';
export {
  finishProposerBytes,
  recoverFinishProposer,
  validationProposerBytes,
  validationVoteProposerBytes,
} from './signing/proposer.js';
export { recoverRequestSigner, signRequest } from './signing/request.js';
export { recoverStateSigner } from './signing/state-signature.js';
export {
  errorMissVoteBytes,
  recoverErrorMissVoter,
  recoverTimeoutVoter,
  timeoutVoteBytes,
} from './signing/votes.js';
// Session state machine (§5) and state root (§6).
export { type ApplyContext, warmKeyLookupFromBindings } from './state/apply-context.js';
export { applyDiff } from './state/apply-diff.js';
export { dedupKey, dedupKeys, isAcceptedMempoolTx, orderCandidates } from './state/candidates.js';
export { composeDiff } from './state/compose.js';
export { resolveSessionConfig } from './state/config.js';
export { checkNonceLimit } from './state/diff-checks.js';
export type { WarmKeyBinding } from './state/effects.js';
export { sessionFromEscrow } from './state/init.js';
export { type InferenceRecord, InferenceStatus, type SessionState } from './state/types.js';
