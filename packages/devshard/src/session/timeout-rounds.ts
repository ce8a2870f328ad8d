// Bookkeeping of the §7.4 timeout rounds (devshard-protocol.md §7.4; timeouts.ts runs them): one pass
// at a time, and per inference the unix second before which no new vote round starts after one that
// fell short. Only timeouts.ts writes it. A leaf: it holds data only.

/** Which timeout pass runs, and when each inference may be voted on again. */
export class TimeoutRounds {
  #running = false;
  /** Inference id → unix second before which no new vote round starts. */
  readonly #retryAt = new Map<bigint, bigint>();

  /** A pass is in progress (a second one returns at once). */
  get running(): boolean {
    return this.#running;
  }

  /** Runs one pass, marked running from the call on (synchronously, so a concurrent one sees it). */
  async pass<T>(run: () => Promise<T>): Promise<T> {
    this.#running = true;
    try {
      return await run();
    } finally {
      this.#running = false;
    }
  }

  /** Whether a vote round for `id` may start at `now`. */
  mayVote(id: bigint, now: bigint): boolean {
    return (this.#retryAt.get(id) ?? 0n) <= now;
  }

  /** A round for `id` fell short: the next one waits until `at`. */
  retryAt(id: bigint, at: bigint): void {
    this.#retryAt.set(id, at);
  }

  /** `id` timed out or left the open states: nothing to wait for any more. */
  forget(id: bigint): void {
    this.#retryAt.delete(id);
  }

  /** Forgets every inference `open` says is no longer Pending or Started. */
  prune(open: (id: bigint) => boolean): void {
    for (const id of this.#retryAt.keys()) if (!open(id)) this.#retryAt.delete(id);
  }
}
