// Served-bytes check (only what was served is billed): hash what the gateway received for an
// inference the way the executor's MsgFinishInference.response_hash covers it and compare the two.
//
// What response_hash covers is not pinned by devshard-protocol.md (§3.2 names the field only). This
// project takes the executor's definition used by the devnet hosts (packages/devnet host/executor.ts):
// sha256 of exactly the SSE bytes served between the receipt event and the meta event, i.e. every
// model frame `data: …\n\n`. The transport hands each such line over without its `\n\n`, so the
// received bytes are rebuilt as Σ (line ‖ "\n\n"). Comments, `event:`/`id:` lines and blank lines are
// not frames and are not counted.
//
// Verdict per inference: `match` (hash equal), `truncated` (not equal and the stream did not end
// normally: cut, aborted, [DONE] missing), `mismatch` (not equal although the stream ended normally).
// No verdict when no Finish is known (nothing billed beyond the reservation rules).
//
// Dispute: the v5 protocol gives the user no tx to contest a Finish whose hash differs from what it
// received — the Finish is signed by the executor alone, nothing signed by a host covers the bytes
// the user got, and MsgErrorMiss (§5.4) only refunds a Finish whose response_hash equals an error body
// the voters are shown. The verdict is therefore evidence only: an event with both hashes, counts per
// host for routing, and the InferenceResult field.
import { createHash } from 'node:crypto';
import { InferenceStatus } from '../state/types.js';
import type { SessionContext } from './session-context.js';

export type ServedVerdict = 'match' | 'mismatch' | 'truncated';

export interface ServedCounts {
  match: number;
  mismatch: number;
  truncated: number;
}

const FRAME_END = new Uint8Array([0x0a, 0x0a]);

/**
 * Incremental hash of the model frames one inference delivered. OpenSSL's SHA-256 (node:crypto):
 * ~11 µs for a 64-token stream against ~60 µs for the pure-JS hash, two updates per frame included.
 */
export class ServedBytes {
  readonly #hash = createHash('sha256');
  #bytes = 0;
  #ended = false;

  /** One chunk line as the transport delivered it (`data: …`, without the blank line). */
  chunk(line: Uint8Array): void {
    this.#hash.update(line);
    this.#hash.update(FRAME_END);
    this.#bytes += line.length + 2;
  }

  /** The stream reached `data: [DONE]`. */
  done(): void {
    this.#ended = true;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** The hash so far; more frames may still be added afterwards. */
  digest(): Uint8Array {
    const d = this.#hash.copy().digest();
    return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
  }
}

/** response_hash of the Finish the session will bill for inference `id`: queued or applied. */
export function billedResponseHash(
  ctx: Pick<SessionContext, 'replica' | 'pending'>,
  id: bigint,
): Uint8Array | undefined {
  for (const entry of ctx.pending.snapshot()) {
    const tx = entry.tx.tx;
    if (tx.kind === 'finishInference' && tx.msg.inferenceId === id) return tx.msg.responseHash;
  }
  const rec = ctx.replica.state.inferences.get(id);
  if (!rec || rec.status < InferenceStatus.Finished || rec.status === InferenceStatus.TimedOut)
    return undefined;
  return rec.responseHash;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

export function servedVerdict(
  received: ServedBytes,
  finishHash: Uint8Array,
  streamFailed: boolean,
): ServedVerdict {
  if (sameBytes(received.digest(), finishHash)) return 'match';
  return streamFailed || !received.ended ? 'truncated' : 'mismatch';
}

const tallies = new WeakMap<SessionContext, Map<string, ServedCounts>>();

/** Verdict counts by executor address for this session. */
export function servedCounts(ctx: SessionContext): ReadonlyMap<string, Readonly<ServedCounts>> {
  return tallies.get(ctx) ?? new Map();
}

/**
 * Compares and records the verdict of inference `id` executed by `host`: counts it for the host and
 * emits a `served_bytes` event with both hashes (the evidence). Undefined when no Finish is known.
 */
export function checkServedBytes(
  ctx: SessionContext,
  host: string,
  id: bigint,
  received: ServedBytes,
  streamFailed: boolean,
): ServedVerdict | undefined {
  const claimed = billedResponseHash(ctx, id);
  if (claimed === undefined) return undefined;
  const verdict = servedVerdict(received, claimed, streamFailed);
  let byHost = tallies.get(ctx);
  if (!byHost) {
    byHost = new Map();
    tallies.set(ctx, byHost);
  }
  const counts = byHost.get(host) ?? { match: 0, mismatch: 0, truncated: 0 };
  counts[verdict]++;
  byHost.set(host, counts);
  ctx.emit({
    type: 'served_bytes',
    host,
    inferenceId: id,
    verdict,
    claimed,
    received: received.digest(),
    bytes: received.bytes,
  });
  return verdict;
}
