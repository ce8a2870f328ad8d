// Proposer signatures of host-proposed txs (devshard-protocol.md §2.4): the signed preimage is the
// message itself with proposer_sig cleared, re-encoded the way Go does (unknown fields last, so a
// field this schema does not know is still covered). Finish has no domain tag in any revision;
// Validation and ValidationVote take one in the later revision (§11).
import type { PrivateKey } from '@gonka-gateway/chain';
import { encodeMessage } from '../proto/codec.js';
import {
  type MsgFinishInference,
  MsgFinishInferenceSchema,
  type MsgValidation,
  MsgValidationSchema,
  type MsgValidationVote,
  MsgValidationVoteSchema,
} from '../proto/tx-messages.js';
import { DOMAIN_VALIDATION, DOMAIN_VALIDATION_VOTE, type PreimageStyle, withDomain } from './domains.js';
import { defaultRecover, type RecoverFn, recoverPreimageSigner, signPreimage } from './primitive.js';

const NO_SIG = new Uint8Array(0);

export function finishProposerBytes(msg: MsgFinishInference): Uint8Array {
  return encodeMessage(MsgFinishInferenceSchema, { ...msg, proposerSig: NO_SIG });
}

export function validationProposerBytes(msg: MsgValidation, style: PreimageStyle = 'plain'): Uint8Array {
  return withDomain(
    style,
    DOMAIN_VALIDATION,
    encodeMessage(MsgValidationSchema, { ...msg, proposerSig: NO_SIG }),
  );
}

export function validationVoteProposerBytes(
  msg: MsgValidationVote,
  style: PreimageStyle = 'plain',
): Uint8Array {
  return withDomain(
    style,
    DOMAIN_VALIDATION_VOTE,
    encodeMessage(MsgValidationVoteSchema, { ...msg, proposerSig: NO_SIG }),
  );
}

/** Returns the message with proposer_sig set. */
export function signFinish(key: PrivateKey, msg: MsgFinishInference): MsgFinishInference {
  return { ...msg, proposerSig: signPreimage(key, finishProposerBytes(msg)) };
}

export function signValidation(
  key: PrivateKey,
  msg: MsgValidation,
  style: PreimageStyle = 'plain',
): MsgValidation {
  return { ...msg, proposerSig: signPreimage(key, validationProposerBytes(msg, style)) };
}

export function signValidationVote(
  key: PrivateKey,
  msg: MsgValidationVote,
  style: PreimageStyle = 'plain',
): MsgValidationVote {
  return { ...msg, proposerSig: signPreimage(key, validationVoteProposerBytes(msg, style)) };
}

export function recoverFinishProposer(
  msg: MsgFinishInference,
  recover: RecoverFn = defaultRecover,
): string | null {
  return recoverPreimageSigner(finishProposerBytes(msg), msg.proposerSig, recover);
}

export function recoverValidationProposer(
  msg: MsgValidation,
  style: PreimageStyle = 'plain',
  recover: RecoverFn = defaultRecover,
): string | null {
  return recoverPreimageSigner(validationProposerBytes(msg, style), msg.proposerSig, recover);
}

export function recoverValidationVoteProposer(
  msg: MsgValidationVote,
  style: PreimageStyle = 'plain',
  recover: RecoverFn = defaultRecover,
): string | null {
  return recoverPreimageSigner(validationVoteProposerBytes(msg, style), msg.proposerSig, recover);
}
