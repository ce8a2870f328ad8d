// JSON bodies of the host routes that @gonka-gateway/devshard's wire module does not cover
// (devshard-protocol.md §4.3): verify-timeout, challenge-receipt, GET diffs, GET mempool. Bytes are
// standard base64, integers exact (lossless JSON), empty optional fields omitted as Go's omitempty
// does. The payload and diff shapes reuse devshard's decoders, so there is one definition of each.
import {
  type DiffWire,
  decodeBase64,
  decodeDiffWire,
  encodeBase64,
  encodeDiffWire,
  type JsonValue,
  type PayloadWire,
  parseJsonLossless,
  stringifyJsonLossless,
} from '@gonka-gateway/devshard';
import { decodePayload } from '@gonka-gateway/devshard/host';
import { encodePayload } from '@gonka-gateway/devshard/session';

type JsonObject = { [key: string]: JsonValue };

function asObject(v: JsonValue | undefined, what: string): JsonObject {
  if (v === null || v === undefined || typeof v !== 'object' || Array.isArray(v)) {
    throw new SyntaxError(`${what}: expected an object`);
  }
  return v;
}

function u64(o: JsonObject, key: string): bigint {
  const v = o[key];
  if (v === undefined || v === null) return 0n;
  if (typeof v !== 'bigint' || v < 0n || v > 0xffff_ffff_ffff_ffffn) {
    throw new SyntaxError(`${key}: expected a uint64`);
  }
  return v;
}

function optBytes(o: JsonObject, key: string): Uint8Array | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new SyntaxError(`${key}: expected base64`);
  return decodeBase64(v);
}

function list(o: JsonObject, key: string): JsonValue[] {
  const v = o[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new SyntaxError(`${key}: expected an array`);
  return v;
}

const b64List = (items: readonly Uint8Array[] | undefined) =>
  items && items.length > 0 ? items.map(encodeBase64) : undefined;

function payloadOf(o: JsonObject): PayloadWire | undefined {
  const p = o.payload;
  return p === undefined || p === null ? undefined : decodePayload(stringifyJsonLossless(p));
}

function diffsOf(o: JsonObject): DiffWire[] {
  return list(o, 'diffs').map((d) => decodeDiffWire(stringifyJsonLossless(d)));
}

const jsonOf = (text: string) => parseJsonLossless(text);

export type TimeoutReasonName = 'refused' | 'execution';

/** §4.3 VerifyTimeoutRequest. */
export interface VerifyTimeoutBody {
  readonly inferenceId: bigint;
  readonly reason: TimeoutReasonName;
  readonly payload?: PayloadWire;
  readonly diffs: readonly DiffWire[];
}

export function decodeVerifyTimeoutBody(text: string): VerifyTimeoutBody {
  const o = asObject(jsonOf(text), 'verify-timeout request');
  const reason = o.reason;
  if (reason !== 'refused' && reason !== 'execution') {
    throw new SyntaxError('reason: expected "refused" or "execution"');
  }
  const payload = payloadOf(o);
  return { inferenceId: u64(o, 'inference_id'), reason, ...(payload ? { payload } : {}), diffs: diffsOf(o) };
}

export function encodeVerifyTimeoutBody(b: VerifyTimeoutBody): string {
  return stringifyJsonLossless({
    inference_id: b.inferenceId,
    reason: b.reason,
    payload: b.payload ? parseJsonLossless(encodePayload(b.payload)) : undefined,
    diffs: b.diffs.length > 0 ? b.diffs.map((d) => parseJsonLossless(encodeDiffWire(d))) : undefined,
  });
}

/** §4.3 VerifyTimeoutResponse; voter_slot is always present (the host's lowest slot). */
export interface VerifyTimeoutAnswer {
  readonly accept: boolean;
  readonly signature?: Uint8Array;
  readonly voterSlot: number;
  readonly mempool?: readonly Uint8Array[];
  readonly rejectCause?: string;
}

export function encodeVerifyTimeoutAnswer(a: VerifyTimeoutAnswer): string {
  return stringifyJsonLossless({
    accept: a.accept,
    signature: a.signature ? encodeBase64(a.signature) : undefined,
    voter_slot: a.voterSlot,
    mempool: b64List(a.mempool),
    reject_cause: a.rejectCause || undefined,
  });
}

/** §4.3 ChallengeReceiptRequest (`diffs` may be empty, `payload` absent for execution checks). */
export interface ChallengeBody {
  readonly inferenceId: bigint;
  readonly payload?: PayloadWire;
  readonly diffs: readonly DiffWire[];
}

export function decodeChallengeBody(text: string): ChallengeBody {
  const o = asObject(jsonOf(text), 'challenge-receipt request');
  const payload = payloadOf(o);
  return { inferenceId: u64(o, 'inference_id'), ...(payload ? { payload } : {}), diffs: diffsOf(o) };
}

export function encodeChallengeBody(b: ChallengeBody): string {
  return stringifyJsonLossless({
    inference_id: b.inferenceId,
    payload: b.payload ? parseJsonLossless(encodePayload(b.payload)) : undefined,
    diffs: b.diffs.map((d) => parseJsonLossless(encodeDiffWire(d))),
  });
}

/**
 * §4.3 ChallengeReceiptResponse `{receipt?, mempool?}`, plus `confirmed_at` beside the receipt (the
 * Confirm the receipt belongs to also sits in `mempool`, which is what verifiers copy).
 */
export interface ChallengeAnswer {
  readonly receipt?: Uint8Array;
  readonly confirmedAt?: bigint;
  readonly mempool: readonly Uint8Array[];
}

export function encodeChallengeAnswer(a: ChallengeAnswer): string {
  return stringifyJsonLossless({
    receipt: a.receipt ? encodeBase64(a.receipt) : undefined,
    confirmed_at: a.confirmedAt,
    mempool: b64List(a.mempool),
  });
}

export function decodeChallengeAnswer(text: string): ChallengeAnswer {
  const o = asObject(jsonOf(text), 'challenge-receipt response');
  const receipt = optBytes(o, 'receipt');
  const confirmedAt = o.confirmed_at;
  return {
    ...(receipt && receipt.length > 0 ? { receipt } : {}),
    ...(typeof confirmedAt === 'bigint' ? { confirmedAt } : {}),
    mempool: list(o, 'mempool').map((m) => {
      if (typeof m !== 'string') throw new SyntaxError('mempool: expected base64 strings');
      return decodeBase64(m);
    }),
  };
}

/** One GET diffs entry: the diff as it was delivered and the host's root after applying it. */
export interface DiffRecordOut {
  readonly wire: DiffWire;
  readonly stateHash: Uint8Array;
}

/**
 * GET diffs: `[{nonce, txs, user_sig, post_state_root?, state_hash}]`, the flat shape of §4.3 (the
 * reference server nests the diff under `diff`; the gateway client accepts both).
 */
export function encodeDiffRecords(records: readonly DiffRecordOut[]): string {
  const entries = records.map((r) => {
    const diff = encodeDiffWire(r.wire);
    // The DiffJSON object with one more member: splice it before the closing brace.
    return `${diff.slice(0, -1)},"state_hash":${JSON.stringify(encodeBase64(r.stateHash))}}`;
  });
  return `[${entries.join(',')}]`;
}

/** GET mempool: `{txs: [b64 DevshardTx]}`. */
export function encodeMempool(txs: readonly Uint8Array[]): string {
  return stringifyJsonLossless({ txs: txs.map(encodeBase64) });
}
