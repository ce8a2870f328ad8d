// Authorization values already used with one provider (chain-and-network.md §4.5: a reused
// Authorization is rejected). An entry can be forgotten once its timestamp is older than the
// expiration window, because the timestamp check rejects it from then on.

export class ReplayCache {
  /** Authorization → request timestamp (ns), in insertion order. */
  readonly #seen = new Map<string, bigint>();

  has(authorization: string): boolean {
    return this.#seen.has(authorization);
  }

  add(authorization: string, timestampNs: bigint): void {
    this.#seen.set(authorization, timestampNs);
  }

  /** Drops entries with timestamp < oldestValidNs, scanning from the oldest insertions. */
  prune(oldestValidNs: bigint): void {
    for (const [auth, ts] of this.#seen) {
      if (ts >= oldestValidNs) break;
      this.#seen.delete(auth);
    }
  }

  get size(): number {
    return this.#seen.size;
  }
}
