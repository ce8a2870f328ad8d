// JSON bodies of the routes that json/wire.ts does not cover (devshard-protocol.md §4.3):
// verify-timeout request/response, GET diffs and GET mempool. Both directions are here so the
// devnet hosts encode exactly what this client decodes. Bytes are standard base64, integers exact.
import { decodeBase64, encodeBase64 } from '../json/base64.js';
import { asObject, bool, list, optBytes, str, u32, u64 } from '../json/fields.js';
import {
  type JsonValue,
  type JsonWritable,
  parseJsonLossless,
  stringifyJsonLossless,
} from '../json/lossless.js';
import {
  type DiffWire,
  decodeDiffWire,
  decodeInferenceRequest,
  encodeDiffWire,
  encodePayload,
} from '../json/wire.js';
import type { DiffRecord, VerifyTimeoutRequest, VerifyTimeoutResponse } from './types.js';

const b64List = (items: readonly Uint8Array[] | undefined) =>
  items && items.length > 0 ? items.map(encodeBase64) : undefined;

function bytesList(o: Record<string, JsonValue>, key: string): Uint8Array[] {
  return list(o, key).map((v) => {
    if (typeof v !== 'string') throw new SyntaxError(`${key}: expected base64 strings`);
    return decodeBase64(v);
  });
}

// The payload and diff shapes are shared with the chat request; reuse its codec through JSON text
// so there is one definition of each field name.
function diffJson(d: DiffWire): JsonValue {
  return parseJsonLossless(encodeDiffWire(d));
}

export function encodeVerifyTimeoutRequest(req: VerifyTimeoutRequest): string {
  const out: Record<string, JsonWritable | undefined> = {
    inference_id: req.inferenceId,
    reason: req.reason,
    payload: req.payload ? parseJsonLossless(encodePayload(req.payload)) : undefined,
    diffs: req.diffs && req.diffs.length > 0 ? req.diffs.map(diffJson) : undefined,
  };
  return stringifyJsonLossless(out);
}

export function decodeVerifyTimeoutRequest(text: string): VerifyTimeoutRequest {
  const o = asObject(parseJsonLossless(text), 'verify-timeout request');
  const reason = str(o, 'reason');
  if (reason !== 'refused' && reason !== 'execution') throw new SyntaxError('reason: refused|execution');
  // The chat-request decoder owns the payload and diff field rules.
  const inner = decodeInferenceRequest(
    stringifyJsonLossless({ diffs: o.diffs ?? [], nonce: 0n, payload: o.payload ?? undefined }),
  );
  return {
    inferenceId: u64(o, 'inference_id'),
    reason,
    ...(inner.payload ? { payload: inner.payload } : {}),
    ...(inner.diffs.length > 0 ? { diffs: inner.diffs } : {}),
  };
}

export function encodeVerifyTimeoutResponse(res: VerifyTimeoutResponse): string {
  return stringifyJsonLossless({
    accept: res.accept,
    signature: res.signature && res.signature.length > 0 ? encodeBase64(res.signature) : undefined,
    voter_slot: res.voterSlot,
    mempool: b64List(res.mempool),
    reject_cause: res.rejectCause ? res.rejectCause : undefined,
  });
}

export function decodeVerifyTimeoutResponse(text: string): VerifyTimeoutResponse {
  const o = asObject(parseJsonLossless(text), 'verify-timeout response');
  const signature = optBytes(o, 'signature');
  const mempool = bytesList(o, 'mempool');
  const rejectCause = str(o, 'reject_cause');
  return {
    accept: bool(o, 'accept'),
    ...(signature && signature.length > 0 ? { signature } : {}),
    voterSlot: u32(o, 'voter_slot'),
    ...(mempool.length > 0 ? { mempool } : {}),
    ...(rejectCause ? { rejectCause } : {}),
  };
}

/** GET diffs: `[{<diff fields>, state_hash}]` (§4.3). */
export function encodeDiffRecords(records: readonly DiffRecord[]): string {
  return `[${records
    .map((r) => {
      const fields = diffJson(r.diff) as Record<string, JsonWritable>;
      return stringifyJsonLossless({
        ...fields,
        state_hash: r.stateHash && r.stateHash.length > 0 ? encodeBase64(r.stateHash) : undefined,
      });
    })
    .join(',')}]`;
}

/**
 * Accepts the flat shape of §4.3 and the reference client's `{diff: {...}, state_hash}` nesting,
 * since the two descriptions differ.
 */
export function decodeDiffRecords(text: string): DiffRecord[] {
  const value = parseJsonLossless(text);
  if (!Array.isArray(value)) throw new SyntaxError('diffs: expected an array');
  return value.map((entry) => {
    const o = asObject(entry, 'diff record');
    const inner = o.diff !== undefined && o.diff !== null ? asObject(o.diff, 'diff') : o;
    const stateHash = optBytes(o, 'state_hash');
    return {
      diff: decodeDiffWire(stringifyJsonLossless(inner)),
      ...(stateHash && stateHash.length > 0 ? { stateHash } : {}),
    };
  });
}

/** GET mempool: `{txs: [b64 DevshardTx]}`. */
export function encodeMempoolResponse(txs: readonly Uint8Array[]): string {
  return stringifyJsonLossless({ txs: txs.map(encodeBase64) });
}

export function decodeMempoolResponse(text: string): Uint8Array[] {
  return bytesList(asObject(parseJsonLossless(text), 'mempool response'), 'txs');
}
