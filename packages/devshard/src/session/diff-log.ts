// The session's recent signed diffs in nonce order with the root after each (devshard-protocol.md
// §7.1 "diff log"), bounded so a session's memory does not grow with its nonce: the last `window`
// diffs stay in memory as the source of catch-up (§7.3) and of the roots a host's state_hash is
// compared with (§7.2 step 1); older diffs are read back from the store (delivery.ts `diffsFor`).
// Prompt payloads are kept only for inferences still Pending, for refused timeouts (§7.4); the
// diffs held here carry none (the store keeps them).
import type { PayloadWire } from '../json/wire.js';
import type { StoredDiff } from './store.js';

/** Diffs kept in memory by default. */
export const DEFAULT_DIFF_WINDOW = 1_000;

export class DiffLog {
  /**
   * Held diffs are #diffs[#head…]. A diff leaving the window has its slot cleared at once (else the
   * prefix would keep up to `window` more diffs alive, a heap that swings with the nonce);
   * the empty prefix is cut off in batches so appending stays O(1).
   */
  #diffs: (StoredDiff | undefined)[] = [];
  #head = 0;
  #latest: bigint;
  readonly #window: number;
  readonly #payloads = new Map<bigint, PayloadWire>();

  /**
   * `baseNonce`/`baseRoot`: the state the log continues from (0 and the initial root, or a
   * snapshot's nonce and root).
   */
  constructor(
    readonly baseRoot: Uint8Array,
    readonly baseNonce: bigint = 0n,
    window: number = DEFAULT_DIFF_WINDOW,
  ) {
    if (!Number.isInteger(window) || window < 1)
      throw new RangeError('diff window must be a positive integer');
    this.#latest = baseNonce;
    this.#window = window;
  }

  get latestNonce(): bigint {
    return this.#latest;
  }

  /** Oldest nonce held in memory (latest + 1 when none is). */
  get firstHeld(): bigint {
    return this.#latest - BigInt(this.#diffs.length - this.#head) + 1n;
  }

  /** Number of diffs held in memory (at most the window). */
  get held(): number {
    return this.#diffs.length - this.#head;
  }

  append(diff: StoredDiff): void {
    if (diff.nonce !== this.#latest + 1n) throw new RangeError(`diff ${diff.nonce} after ${this.#latest}`);
    let kept = diff;
    if (diff.payload) {
      this.#payloads.set(diff.nonce, diff.payload);
      const { payload: _inStore, ...rest } = diff;
      kept = rest;
    }
    this.#diffs.push(kept);
    this.#latest = diff.nonce;
    if (this.held > this.#window) this.#diffs[this.#head++] = undefined;
    if (this.#head >= this.#window) {
      this.#diffs = this.#diffs.slice(this.#head);
      this.#head = 0;
    }
  }

  /** The diff at `nonce` if it is held in memory (without its payload). */
  get(nonce: bigint): StoredDiff | undefined {
    if (nonce < this.firstHeld || nonce > this.#latest) return undefined;
    return this.#diffs[this.#head + Number(nonce - this.firstHeld)];
  }

  /**
   * Our root after `nonce`; undefined beyond the latest nonce, and for a nonce older than the window
   * (other than the base), which only the store still knows.
   */
  rootAt(nonce: bigint): Uint8Array | undefined {
    if (nonce === this.baseNonce) return this.baseRoot;
    return this.get(nonce)?.root;
  }

  /** Held diffs with from ≤ nonce ≤ to; the part below `firstHeld` is not included. */
  range(from: bigint, to: bigint): StoredDiff[] {
    const first = this.firstHeld;
    const lo = from < first ? first : from;
    const hi = to > this.#latest ? this.#latest : to;
    if (lo > hi) return [];
    const start = this.#head + Number(lo - first);
    return this.#diffs.slice(start, start + Number(hi - lo) + 1) as StoredDiff[]; // all at or after #head
  }

  payload(inferenceId: bigint): PayloadWire | undefined {
    return this.#payloads.get(inferenceId);
  }

  /** Payloads the store returned at open (inferences started before the replayed diffs). */
  restorePayloads(payloads: ReadonlyMap<bigint, PayloadWire>): void {
    for (const [id, p] of payloads) if (!this.#payloads.has(id)) this.#payloads.set(id, p);
  }

  /** Drops payloads of inferences that are no longer Pending (they cannot be refused any more). */
  prunePayloads(stillPending: (id: bigint) => boolean): void {
    for (const id of this.#payloads.keys()) if (!stillPending(id)) this.#payloads.delete(id);
  }

  /** Payloads held in memory (one per Pending inference at most). */
  get payloadCount(): number {
    return this.#payloads.size;
  }
}
