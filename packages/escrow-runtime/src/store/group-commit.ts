// Group commit of the store's hot writes (architecture §2.3, §4): the write-aheads of all sessions of
// one process share one statement, and so do their post-answer writes. The classic shape, with no
// timer: a write that finds no statement of its kind in flight goes at once (alone, so a lone
// request waits no longer than without grouping); writes arriving while one is in flight wait and
// go together as the next statement, once it has settled. Each write's promise settles only after
// the statement that carried it has returned, so a caller that sends after its write resolves sends
// nothing that is not durable. At most one write per escrow rides in a statement: a second one waits
// for the next, keeping each escrow's writes in the order they were made (and one upsert per row).

interface Waiting<E> {
  readonly entry: E;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/** A write in a statement: settle it exactly once, after the statement has returned. */
export interface Carried<E> extends Waiting<E> {}

export interface GroupCommitOptions<E> {
  /** The escrow a write is for: one write per escrow per statement. */
  readonly key: (entry: E) => string;
  /** Upper bound of writes per statement (the statement's size, not its count, grows with load). */
  readonly maxBatch: number;
  /** One write alone (nothing else in flight when it arrived). Its promise settles the write. */
  readonly one: (entry: E) => Promise<void>;
  /**
   * Two or more writes in one statement; must settle every one of them (resolve or reject) before
   * it returns. Throwing rejects every write not yet settled with that error.
   */
  readonly many: (carried: readonly Carried<E>[]) => Promise<void>;
}

export class GroupCommit<E> {
  readonly #options: GroupCommitOptions<E>;
  #queue: Waiting<E>[] = [];
  #running = false;

  constructor(options: GroupCommitOptions<E>) {
    if (!Number.isInteger(options.maxBatch) || options.maxBatch < 1) {
      throw new RangeError('maxBatch must be an integer ≥ 1');
    }
    this.#options = options;
  }

  /** Writes `entry` in the next statement; resolves once that statement has returned. */
  submit(entry: E): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ entry, resolve, reject });
      if (!this.#running) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#running = true;
    try {
      while (this.#queue.length > 0) await this.#statement(this.#take());
    } finally {
      this.#running = false;
    }
  }

  /** The next statement's writes: queue order, at most one per escrow, at most maxBatch. */
  #take(): Waiting<E>[] {
    const taken: Waiting<E>[] = [];
    const rest: Waiting<E>[] = [];
    const keys = new Set<string>();
    for (const w of this.#queue) {
      const key = this.#options.key(w.entry);
      if (taken.length < this.#options.maxBatch && !keys.has(key)) {
        keys.add(key);
        taken.push(w);
      } else {
        // Later writes of a skipped escrow stay behind it (its key is in `keys` or the batch is full).
        keys.add(key);
        rest.push(w);
      }
    }
    this.#queue = rest;
    return taken;
  }

  async #statement(batch: Waiting<E>[]): Promise<void> {
    if (batch.length === 1) {
      const [w] = batch as [Waiting<E>];
      await this.#options.one(w.entry).then(w.resolve, w.reject);
      return;
    }
    let settled = 0;
    const carried = batch.map((w) => {
      let done = false;
      const once =
        <A extends unknown[]>(f: (...a: A) => void) =>
        (...a: A) => {
          if (done) return;
          done = true;
          settled++;
          f(...a);
        };
      return { entry: w.entry, resolve: once(w.resolve), reject: once(w.reject) };
    });
    try {
      await this.#options.many(carried);
    } catch (error) {
      for (const c of carried) c.reject(error);
    }
    if (settled < carried.length) {
      const error = new Error('group commit: a write of the statement was left unsettled');
      for (const c of carried) c.reject(error);
    }
  }
}
