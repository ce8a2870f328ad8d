// JSON shapes of the host transport (devshard-protocol.md §4.3, §4.4) as typed values. Bytes travel
// as standard base64, uint64/int64 as bare JSON integers (exact: see lossless.ts), empty optional
// fields are omitted as Go's `omitempty` does.
import { DevshardError, DevshardErrorCode } from '../errors.js';
import { decodeDiffTxs, diffTxsBlob } from '../proto/diff-content.js';
import type { SignedDiff } from '../signing/diff.js';
import { encodeBase64 } from './base64.js';
import { asObject, bool, bytes, list, optBytes, optI64, optU64, str, u64 } from './fields.js';
import { type JsonValue, type JsonWritable, parseJsonLossless, stringifyJsonLossless } from './lossless.js';

/** DiffJSON: `txs` is DiffContent with fields 1–2 only; hosts re-add escrow id and root. */
export interface DiffWire {
  readonly nonce: bigint;
  readonly txs: Uint8Array;
  readonly userSig: Uint8Array;
  readonly postStateRoot?: Uint8Array;
}

export interface PayloadWire {
  /** Exactly the bytes whose canonical JSON hash is the start's prompt_hash (§2.5). */
  readonly prompt: Uint8Array;
  readonly model: string;
  readonly inputLength: bigint;
  readonly maxTokens: bigint;
  /** Unix seconds. */
  readonly startedAt: bigint;
}

export interface InferenceRequestWire {
  readonly diffs: readonly DiffWire[];
  readonly nonce: bigint;
  readonly payload?: PayloadWire;
  readonly stream?: boolean;
  readonly forceHeightSyncAnchor?: boolean;
}

/** First SSE event (`{"devshard_receipt": …}`), also the legacy non-SSE response body. */
export interface ReceiptEvent {
  readonly stateSig?: Uint8Array;
  readonly stateHash?: Uint8Array;
  readonly nonce: bigint;
  readonly receipt?: Uint8Array;
  readonly confirmedAt?: bigint;
  readonly observedHeight?: bigint;
  readonly observedBlockHash?: Uint8Array;
  /** Legacy non-SSE responses carry the mempool here. */
  readonly mempool?: readonly Uint8Array[];
}

/** Last SSE event before [DONE] (`{"devshard_meta": {"mempool": […]}}`). */
export interface MetaEvent {
  readonly mempool: readonly Uint8Array[];
}

const b64 = (v: Uint8Array | undefined) => (v && v.length > 0 ? encodeBase64(v) : undefined);
const nonZero = (v: bigint | undefined) => (v !== undefined && v !== 0n ? v : undefined);

/**
 * The wire forms of recent diffs: a diff goes to every host that lacks it (about one send per host,
 * soon after it is composed), and its `txs` blob and JSON text would otherwise be rebuilt for each
 * send. Diffs and wire forms are immutable, so a cached value is the one a rebuild would give. A
 * small FIFO of strong entries rather than a WeakMap over the whole diff window: bounded memory and
 * no ephemeron per held diff for the GC to trace.
 */
const RECENT_MAX = 256;
const wireOfDiff = new Map<SignedDiff, DiffWire>();
const textOfDiffWire = new Map<DiffWire, string>();

function remember<K, V>(cache: Map<K, V>, key: K, value: V): V {
  if (cache.size >= RECENT_MAX) cache.delete(cache.keys().next().value as K);
  cache.set(key, value);
  return value;
}

export function diffToWire(diff: SignedDiff): DiffWire {
  return (
    wireOfDiff.get(diff) ??
    remember(wireOfDiff, diff, {
      nonce: diff.nonce,
      txs: diffTxsBlob(diff.nonce, diff.txs),
      userSig: diff.userSig,
      ...(diff.postStateRoot.length > 0 ? { postStateRoot: diff.postStateRoot } : {}),
    })
  );
}

/**
 * The diff a DiffJSON carries. Go hosts ignore the nonce inside `txs` and re-encode the txs before
 * verifying; with `strict` (the host path here) a blob that is not exactly the canonical encoding
 * of {nonce, txs} is refused instead, so no byte of a signed diff can change unnoticed.
 */
export function diffFromWire(wire: DiffWire, options: { strict?: boolean } = {}): SignedDiff {
  const decoded = decodeDiffTxs(wire.txs);
  if (options.strict && (!decoded.canonical || decoded.nonce !== wire.nonce)) {
    throw new DevshardError(DevshardErrorCode.NonCanonical, `diff ${wire.nonce} txs blob`);
  }
  return {
    nonce: wire.nonce,
    txs: decoded.txs.map(({ bytes: b, tx }) => ({ bytes: b, tx })),
    userSig: wire.userSig,
    postStateRoot: wire.postStateRoot ?? new Uint8Array(0),
  };
}

function diffWireFrom(v: JsonValue): DiffWire {
  const o = asObject(v, 'diff');
  const root = optBytes(o, 'post_state_root');
  return {
    nonce: u64(o, 'nonce'),
    txs: bytes(o, 'txs'),
    userSig: bytes(o, 'user_sig'),
    ...(root && root.length > 0 ? { postStateRoot: root } : {}),
  };
}

/**
 * One DiffJSON object as text (e.g. to persist a diff exactly as it is sent): the text
 * stringifyJsonLossless gives for its members, written directly (base64 needs no JSON escaping).
 */
export function encodeDiffWire(d: DiffWire): string {
  const cached = textOfDiffWire.get(d);
  if (cached !== undefined) return cached;
  let text = `{"nonce":${d.nonce},"txs":"${encodeBase64(d.txs)}","user_sig":"${encodeBase64(d.userSig)}"`;
  if (d.postStateRoot !== undefined && d.postStateRoot.length > 0) {
    text += `,"post_state_root":"${encodeBase64(d.postStateRoot)}"`;
  }
  return remember(textOfDiffWire, d, `${text}}`);
}

export function decodeDiffWire(text: string): DiffWire {
  return diffWireFrom(parseJsonLossless(text));
}

function payloadFrom(v: JsonValue): PayloadWire {
  const o = asObject(v, 'payload');
  return {
    prompt: bytes(o, 'prompt'),
    model: str(o, 'model'),
    inputLength: u64(o, 'input_length'),
    maxTokens: u64(o, 'max_tokens'),
    startedAt: optI64(o, 'started_at') ?? 0n,
  };
}

/** InferenceRequest JSON (§4.3), member order and omissions as stringifyJsonLossless writes them. */
export function encodeInferenceRequest(req: InferenceRequestWire): string {
  let text = '{"diffs":[';
  for (let i = 0; i < req.diffs.length; i++) {
    if (i > 0) text += ',';
    text += encodeDiffWire(req.diffs[i]!);
  }
  text += `],"nonce":${req.nonce}`;
  if (req.payload) text += `,"payload":${encodePayload(req.payload)}`;
  if (req.stream) text += ',"stream":true';
  if (req.forceHeightSyncAnchor) text += ',"force_height_sync_anchor":true';
  return `${text}}`;
}

export function decodeInferenceRequest(text: string): InferenceRequestWire {
  const o = asObject(parseJsonLossless(text), 'inference request');
  const payload = o.payload === undefined || o.payload === null ? undefined : payloadFrom(o.payload);
  return {
    diffs: list(o, 'diffs').map(diffWireFrom),
    nonce: u64(o, 'nonce'),
    ...(payload ? { payload } : {}),
    ...(bool(o, 'stream') ? { stream: true } : {}),
    ...(bool(o, 'force_height_sync_anchor') ? { forceHeightSyncAnchor: true } : {}),
  };
}

export function encodePayload(p: PayloadWire): string {
  return (
    `{"prompt":"${encodeBase64(p.prompt)}","model":${JSON.stringify(p.model)},` +
    `"input_length":${p.inputLength},"max_tokens":${p.maxTokens},"started_at":${p.startedAt}}`
  );
}

export function decodePayload(text: string): PayloadWire {
  return payloadFrom(parseJsonLossless(text));
}

function receiptJson(e: ReceiptEvent): JsonWritable {
  return {
    state_sig: b64(e.stateSig),
    state_hash: b64(e.stateHash),
    nonce: e.nonce,
    receipt: b64(e.receipt),
    confirmed_at: nonZero(e.confirmedAt),
    observed_height: nonZero(e.observedHeight),
    observed_block_hash: b64(e.observedBlockHash),
    mempool: e.mempool && e.mempool.length > 0 ? e.mempool.map(encodeBase64) : undefined,
  };
}

function receiptFrom(v: JsonValue): ReceiptEvent {
  const o = asObject(v, 'devshard_receipt');
  const out: { -readonly [K in keyof ReceiptEvent]: ReceiptEvent[K] } = { nonce: u64(o, 'nonce') };
  const sig = optBytes(o, 'state_sig');
  const hash = optBytes(o, 'state_hash');
  const receipt = optBytes(o, 'receipt');
  const blockHash = optBytes(o, 'observed_block_hash');
  const confirmedAt = optI64(o, 'confirmed_at');
  const observedHeight = optU64(o, 'observed_height');
  if (sig && sig.length > 0) out.stateSig = sig;
  if (hash && hash.length > 0) out.stateHash = hash;
  if (receipt && receipt.length > 0) out.receipt = receipt;
  if (confirmedAt !== undefined) out.confirmedAt = confirmedAt;
  if (observedHeight !== undefined) out.observedHeight = observedHeight;
  if (blockHash && blockHash.length > 0) out.observedBlockHash = blockHash;
  const mempool = list(o, 'mempool');
  if (mempool.length > 0) out.mempool = mempool.map((m) => bytes({ m }, 'm'));
  return out;
}

/** The `data:` JSON of the receipt event: `{"devshard_receipt": {...}}`. */
export function encodeReceiptEvent(e: ReceiptEvent): string {
  return stringifyJsonLossless({ devshard_receipt: receiptJson(e) });
}

/** The `data:` JSON of the meta event: `{"devshard_meta": {"mempool": [...]}}`. */
export function encodeMetaEvent(e: MetaEvent): string {
  const mempool = e.mempool.length > 0 ? e.mempool.map(encodeBase64) : undefined;
  return stringifyJsonLossless({ devshard_meta: { mempool } });
}

export type DevshardEvent =
  | { readonly type: 'receipt'; readonly event: ReceiptEvent }
  | { readonly type: 'meta'; readonly event: MetaEvent }
  | { readonly type: 'other'; readonly value: JsonValue };

/** Classifies the JSON of one SSE `data:` line (not `[DONE]`); chat chunks come back as `other`. */
export function decodeDevshardEvent(dataJson: string): DevshardEvent {
  return devshardEventOf(parseJsonLossless(dataJson));
}

/** decodeDevshardEvent of JSON already parsed (lossless.ts). */
export function devshardEventOf(value: JsonValue): DevshardEvent {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    if (value.devshard_receipt !== undefined) {
      return { type: 'receipt', event: receiptFrom(value.devshard_receipt) };
    }
    if (value.devshard_meta !== undefined) {
      const meta = asObject(value.devshard_meta, 'devshard_meta');
      return { type: 'meta', event: { mempool: list(meta, 'mempool').map((m) => bytes({ m }, 'm')) } };
    }
  }
  return { type: 'other', value };
}

/** Legacy non-SSE response body (`{state_sig?, state_hash?, nonce, receipt?, confirmed_at?, mempool?}`). */
export function decodeLegacyResponse(text: string): ReceiptEvent {
  return receiptFrom(parseJsonLossless(text));
}

/** GET signatures → `{signatures: {"<slot>": b64}}`, as slot → signature. */
export function decodeSignaturesResponse(text: string): Map<number, Uint8Array> {
  const o = asObject(parseJsonLossless(text), 'signatures response');
  const sigs =
    o.signatures === undefined || o.signatures === null ? {} : asObject(o.signatures, 'signatures');
  const out = new Map<number, Uint8Array>();
  for (const [slot, sig] of Object.entries(sigs)) {
    if (!/^(0|[1-9][0-9]{0,9})$/.test(slot) || Number(slot) > 0xffff_ffff) throw new SyntaxError('slot key');
    out.set(Number(slot), bytes({ sig }, 'sig'));
  }
  return out;
}

export function encodeSignaturesResponse(sigs: ReadonlyMap<number, Uint8Array>): string {
  const o: Record<string, string> = {};
  for (const [slot, sig] of [...sigs].sort((a, b) => a[0] - b[0])) o[String(slot)] = encodeBase64(sig);
  return stringifyJsonLossless({ signatures: o });
}
