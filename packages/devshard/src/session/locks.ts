// Small async coordination primitives, per session (never module-level): a serial lock for diff
// composition (one nonce at a time, §7.1), keyed serial locks for per-host catch-up (§7.3), and a
// keyed semaphore capping concurrent verify calls per host (§7.4, reference cap 32).

export class SerialLock {
  #tail: Promise<unknown> = Promise.resolve();

  /** Runs `fn` after every earlier call has settled. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(fn, fn);
    this.#tail = result.catch(() => undefined);
    return result;
  }
}

export class KeyedLock {
  readonly #locks = new Map<string, { lock: SerialLock; users: number }>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const entry = this.#locks.get(key) ?? { lock: new SerialLock(), users: 0 };
    this.#locks.set(key, entry);
    entry.users++;
    try {
      return await entry.lock.run(fn);
    } finally {
      if (--entry.users === 0) this.#locks.delete(key);
    }
  }
}

export class KeyedSemaphore {
  readonly #active = new Map<string, number>();
  readonly #waiting = new Map<string, (() => void)[]>();

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError('semaphore limit must be ≥ 1');
  }

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    if ((this.#active.get(key) ?? 0) >= this.limit) {
      await new Promise<void>((resolve) => {
        const queue = this.#waiting.get(key) ?? [];
        queue.push(resolve);
        this.#waiting.set(key, queue);
      });
    } else {
      this.#active.set(key, (this.#active.get(key) ?? 0) + 1);
    }
    try {
      return await fn();
    } finally {
      const next = this.#waiting.get(key)?.shift();
      if (next)
        next(); // the slot passes straight to the next waiter
      else {
        const n = (this.#active.get(key) ?? 1) - 1;
        if (n === 0) this.#active.delete(key);
        else this.#active.set(key, n);
        this.#waiting.delete(key);
      }
    }
  }
}
