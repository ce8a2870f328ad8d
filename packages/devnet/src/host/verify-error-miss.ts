// POST verify-error-miss (devshard-protocol.md §4.3 VerifyErrorMissRequest, §5.4 ErrorMiss): the
// user shows the voters the Finish it was billed by and the response body it received; a voter accepts
// when, after the catch-up diffs, the record is Finished, the shown Finish is that record's (same
// response_hash), the body hashes to that response_hash, and the body is an error answer (an OpenAI
// `error` object, as SSE data lines or plain JSON) — the executor billed tokens for no answer. The
// vote is signed over ErrorMissVoteContent{escrow_id, inference_id, accept, response_hash}. With
// accept weight > vote_threshold the user's MsgErrorMiss turns the record TimedOut, refunds its cost
// and counts a miss. The devnet executor produces such answers under the `error-body` fault.
import { sha256 } from '@gonka-gateway/chain';
import {
  type DiffWire,
  decodeBase64,
  decodeDiffWire,
  decodeTx,
  errorMissVoteBytes,
  InferenceStatus,
  parseJsonLossless,
  signPreimage,
  stringifyJsonLossless,
} from '@gonka-gateway/devshard';
import type { HostSession } from './session.js';
import type { HostStore } from './session-store.js';
import type { VerifyTimeoutAnswer } from './wire.js';

export interface VerifyErrorMissBody {
  readonly inferenceId: bigint;
  readonly diffs: readonly DiffWire[];
  /** The MsgFinishInference tx (DevshardTx bytes) the user was billed by. */
  readonly finishTx: Uint8Array;
  /** The response body the user received. */
  readonly responsePayload: Uint8Array;
}

export function decodeVerifyErrorMissBody(text: string): VerifyErrorMissBody {
  const o = parseJsonLossless(text);
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new SyntaxError('expected an object');
  const b = o as Record<string, unknown>;
  const id = b.inference_id;
  if (typeof id !== 'bigint' || id < 0n) throw new SyntaxError('inference_id: expected a uint64');
  if (typeof b.finish_tx !== 'string') throw new SyntaxError('finish_tx: expected base64');
  if (typeof b.response_payload !== 'string') throw new SyntaxError('response_payload: expected base64');
  const diffs = b.diffs === undefined || b.diffs === null ? [] : b.diffs;
  if (!Array.isArray(diffs)) throw new SyntaxError('diffs: expected an array');
  return {
    inferenceId: id,
    diffs: diffs.map((d) => decodeDiffWire(stringifyJsonLossless(d))),
    finishTx: decodeBase64(b.finish_tx),
    responsePayload: decodeBase64(b.response_payload),
  };
}

/** An OpenAI error answer: every JSON object in the body (SSE data lines or one JSON) has `error`. */
export function isErrorBody(body: Uint8Array): boolean {
  const text = Buffer.from(body).toString('utf8').trim();
  const parts = text.startsWith('data: ')
    ? text
        .split('\n')
        .filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
        .map((l) => l.slice(6))
    : [text];
  if (parts.length === 0) return false;
  return parts.every((p) => {
    try {
      const v = JSON.parse(p) as unknown;
      return v !== null && typeof v === 'object' && typeof (v as { error?: unknown }).error === 'object';
    } catch {
      return false;
    }
  });
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

export interface ErrorMissDeps {
  readonly store: HostStore;
  readonly maxNonce: bigint;
}

export function verifyErrorMiss(
  session: HostSession,
  body: VerifyErrorMissBody,
  deps: ErrorMissDeps,
): VerifyTimeoutAnswer | { readonly error: Error } {
  const delivery = session.deliver(body.diffs, deps.store.applyContext, deps.maxNonce);
  if (delivery.error) return { error: delivery.error };
  const id = body.inferenceId;
  const voterSlot = session.primarySlot;
  const reject = (rejectCause: string): VerifyTimeoutAnswer => ({ accept: false, voterSlot, rejectCause });
  const rec = session.state.inferences.get(id);
  if (!rec) return reject('inference not live');
  if (rec.status !== InferenceStatus.Finished) return reject('inference is not finished');
  let finish: ReturnType<typeof decodeTx>;
  try {
    finish = decodeTx(body.finishTx);
  } catch {
    return reject('finish_tx does not decode');
  }
  const t = finish.tx;
  if (t.kind !== 'finishInference' || t.msg.inferenceId !== id) return reject('finish_tx is not this Finish');
  if (!sameBytes(t.msg.responseHash, rec.responseHash)) return reject('finish_tx differs from the record');
  if (!sameBytes(sha256(body.responsePayload), rec.responseHash)) {
    return reject('response_payload does not hash to response_hash');
  }
  if (!isErrorBody(body.responsePayload)) return reject('response_payload is not an error body');
  const preimage = errorMissVoteBytes({
    escrowId: session.id,
    inferenceId: id,
    accept: true,
    responseHash: rec.responseHash,
  });
  const signature = deps.store.sign(preimage, (key) => signPreimage(key, preimage));
  return { accept: true, voterSlot, signature };
}
