// The session's signed diffs in nonce order with the root after each (devshard-protocol.md §7.1 "diff
// log"): the source of catch-up diffs (§7.3) and of the root a host's state_hash is compared with
// (§7.2 step 1). Also keeps the payload of every inference still Pending, for refused timeouts (§7.4).
import type { PayloadWire } from '../json/wire.js';
import type { StoredDiff } from './store.js';

export class DiffLog {
  readonly #diffs: StoredDiff[] = [];
  readonly #payloads = new Map<bigint, PayloadWire>();

  constructor(readonly initialRoot: Uint8Array) {}

  get latestNonce(): bigint {
    return BigInt(this.#diffs.length);
  }

  append(diff: StoredDiff): void {
    if (diff.nonce !== this.latestNonce + 1n)
      throw new RangeError(`diff ${diff.nonce} after ${this.latestNonce}`);
    this.#diffs.push(diff);
    if (diff.payload) this.#payloads.set(diff.nonce, diff.payload);
  }

  get(nonce: bigint): StoredDiff | undefined {
    return nonce >= 1n ? this.#diffs[Number(nonce) - 1] : undefined;
  }

  /** Our root after `nonce` (0 = the initial state); undefined beyond the latest nonce. */
  rootAt(nonce: bigint): Uint8Array | undefined {
    if (nonce === 0n) return this.initialRoot;
    return this.get(nonce)?.root;
  }

  /** Diffs with from ≤ nonce ≤ to. */
  range(from: bigint, to: bigint): StoredDiff[] {
    const lo = Number(from < 1n ? 1n : from) - 1;
    const hi = Number(to > this.latestNonce ? this.latestNonce : to);
    return lo >= hi ? [] : this.#diffs.slice(lo, hi);
  }

  payload(inferenceId: bigint): PayloadWire | undefined {
    return this.#payloads.get(inferenceId);
  }

  /** Drops payloads of inferences that are no longer Pending (they cannot be refused any more). */
  prunePayloads(stillPending: (id: bigint) => boolean): void {
    for (const id of this.#payloads.keys()) if (!stillPending(id)) this.#payloads.delete(id);
  }
}
