// The './host' face of @gonka-gateway/devshard: what a devshard host implementation needs beyond the
// protocol core (the devnet's hosts use it): decoding user requests, encoding its answers and route
// bodies (devshard-protocol.md §4.2–§4.4), and signing as a host (§2.4).

// Wire (§4.3) as a host reads requests and writes answers.
export {
  decodeInferenceRequest,
  decodePayload,
  encodeMetaEvent,
  encodeReceiptEvent,
  encodeSignaturesResponse,
  type MetaEvent,
  type ReceiptEvent,
} from './json/wire.js';
// A host's own signatures (§2.4): executor receipts, proposals, votes, height acks, state signatures.
export { signExecutorReceipt } from './signing/executor-receipt.js';
export { signHeightAck } from './signing/height-ack.js';
export { signFinish, signValidation, signValidationVote } from './signing/proposer.js';
export { signStateRoot } from './signing/state-signature.js';
export { signErrorMissVote, signTimeoutVote } from './signing/votes.js';
// Route bodies of §4.2 (mempool, diff records, verify-timeout), both directions.
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
