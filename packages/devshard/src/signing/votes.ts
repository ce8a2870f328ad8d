// Timeout and error-miss votes (devshard-protocol.md §2.4): a voter host signs TimeoutVoteContent or
// ErrorMissVoteContent; the state machine rebuilds the content from the tx and the record. The later
// revision prefixes a domain tag (§11).
import type { PrivateKey } from '@gonka-gateway/chain';
import { createMessage, encodeMessage } from '../proto/codec.js';
import {
  type ErrorMissVoteContent,
  ErrorMissVoteContentSchema,
  type TimeoutVoteContent,
  TimeoutVoteContentSchema,
} from '../proto/signed-contents.js';
import { DOMAIN_ERROR_MISS_VOTE, DOMAIN_TIMEOUT_VOTE, type PreimageStyle, withDomain } from './domains.js';
import { defaultRecover, type RecoverFn, recoverPreimageSigner, signPreimage } from './primitive.js';

export function timeoutVoteBytes(content: TimeoutVoteContent, style: PreimageStyle = 'plain'): Uint8Array {
  return withDomain(
    style,
    DOMAIN_TIMEOUT_VOTE,
    encodeMessage(TimeoutVoteContentSchema, createMessage(TimeoutVoteContentSchema, content)),
  );
}

export function errorMissVoteBytes(
  content: ErrorMissVoteContent,
  style: PreimageStyle = 'plain',
): Uint8Array {
  return withDomain(
    style,
    DOMAIN_ERROR_MISS_VOTE,
    encodeMessage(ErrorMissVoteContentSchema, createMessage(ErrorMissVoteContentSchema, content)),
  );
}

export function signTimeoutVote(
  key: PrivateKey,
  content: TimeoutVoteContent,
  style: PreimageStyle = 'plain',
): Uint8Array {
  return signPreimage(key, timeoutVoteBytes(content, style));
}

export function signErrorMissVote(
  key: PrivateKey,
  content: ErrorMissVoteContent,
  style: PreimageStyle = 'plain',
): Uint8Array {
  return signPreimage(key, errorMissVoteBytes(content, style));
}

export function recoverTimeoutVoter(
  content: TimeoutVoteContent,
  signature: Uint8Array,
  style: PreimageStyle = 'plain',
  recover: RecoverFn = defaultRecover,
): string | null {
  return recoverPreimageSigner(timeoutVoteBytes(content, style), signature, recover);
}

export function recoverErrorMissVoter(
  content: ErrorMissVoteContent,
  signature: Uint8Array,
  style: PreimageStyle = 'plain',
  recover: RecoverFn = defaultRecover,
): string | null {
  return recoverPreimageSigner(errorMissVoteBytes(content, style), signature, recover);
}
