// The models the fleet serves, read from Postgres, the system of record (architecture §4): a model
// with at least one registered escrow whose lifecycle state is `active` and whose local `active`
// flag is set (spec §2.1, §3.1), the escrows the claim loop may own (escrow-runtime
// claim/active-escrows.ts). The pool snapshot in Redis can miss such a model for a while: after a
// Redis flush until the controller rebuilds the pool (architecture §4: "rebuilt from Postgres when
// lost"), and after a registration until an owner publishes the escrow. For a model listed here
// and missing from the pool the chat path answers 503 no_escrow_available with Retry-After, never
// 404 model_not_found.
// Read at start, every refreshEveryMs, and on `pool:changes`: at once for an escrow id the last read
// did not list (a registration, an activation), otherwise at most once per changeGapMs (owners
// announce their progress several times a second).
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import type postgres from 'postgres';

export interface FleetModelsOptions {
  readonly sql: postgres.Sql;
  /** A connection in subscriber mode for `channel` (may be shared; never closed here). */
  readonly subscriber?: Redis;
  /** The pool-changes channel (RedisKeys.poolChanges); required with a subscriber. */
  readonly channel?: string;
  /** Re-read period (default 5 s). */
  readonly refreshEveryMs?: number;
  /** Announcements about escrows already listed are read at most this often (default 1 s). */
  readonly changeGapMs?: number;
  readonly onError?: (error: Error) => void;
}

export class FleetModels {
  readonly #o: FleetModelsOptions;
  #models: ReadonlySet<string> = new Set();
  /** Escrow ids of the last read, as announced on the channel (decimal text). */
  #ids: ReadonlySet<string> = new Set();
  #loaded = false;
  #timer: NodeJS.Timeout | undefined;
  /** When the planned read is due (performance.now()). */
  #dueAt = Number.POSITIVE_INFINITY;
  #loading: Promise<void> | undefined;
  /** performance.now() when the last read started. */
  #readAt = Number.NEGATIVE_INFINITY;
  #stopped = false;
  readonly #onMessage = (channel: string, message: string): void => {
    if (channel === this.#o.channel) this.#changed(!this.#ids.has(message));
  };
  /** Back after a disconnect: announcements made meanwhile never arrived. */
  readonly #onReconnect = (): void => this.#changed(true);

  constructor(options: FleetModelsOptions) {
    if (options.subscriber && !options.channel)
      throw new Error('FleetModels: a subscriber needs its channel');
    this.#o = options;
  }

  /** Whether `model` has a registered, active escrow in Postgres (as of the last read). */
  has(model: string): boolean {
    return this.#models.has(model);
  }

  /** The models of the last read. */
  models(): ReadonlySet<string> {
    return this.#models;
  }

  /** Whether a read has succeeded. */
  get loaded(): boolean {
    return this.#loaded;
  }

  async start(): Promise<void> {
    this.#stopped = false;
    const sub = this.#o.subscriber;
    if (sub) {
      sub.on('message', this.#onMessage);
      sub.on('ready', this.#onReconnect);
      // Subscribed before the first read, so no registration falls between the two.
      await sub.subscribe(this.#o.channel!).catch((error: Error) => this.#o.onError?.(error));
    }
    await this.refresh().catch((error: Error) => this.#o.onError?.(error));
    this.#schedule(this.#o.refreshEveryMs ?? 5_000);
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#o.subscriber?.off('message', this.#onMessage);
    this.#o.subscriber?.off('ready', this.#onReconnect);
  }

  /** One read; concurrent callers share it. */
  refresh(): Promise<void> {
    this.#loading ??= (async () => {
      this.#readAt = performance.now();
      try {
        const rows = await this.#o.sql<{ escrow_id: string; model_id: string }[]>`
          select escrow_id::text as escrow_id, model_id
            from escrows
           where state = 'active' and active`;
        this.#ids = new Set(rows.map((r) => r.escrow_id));
        this.#models = new Set(rows.map((r) => r.model_id));
        this.#loaded = true;
      } finally {
        this.#loading = undefined;
      }
    })();
    return this.#loading;
  }

  /** An announcement: read now when `urgent`, otherwise once changeGapMs after the last read started. */
  #changed(urgent: boolean): void {
    if (this.#stopped) return;
    const gap = urgent ? 0 : (this.#o.changeGapMs ?? 1_000);
    const next = Math.max(0, this.#readAt + gap - performance.now());
    // A read already planned sooner covers this announcement too.
    if (this.#timer && this.#dueAt <= performance.now() + next) return;
    this.#schedule(next);
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#dueAt = performance.now() + delayMs;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#read();
    }, delayMs);
    this.#timer.unref();
  }

  async #read(): Promise<void> {
    // A read in progress may have started before the announcement that planned this one.
    await this.#loading?.catch(() => undefined);
    await this.refresh().catch((error: Error) => this.#o.onError?.(error));
    if (!this.#timer) this.#schedule(this.#o.refreshEveryMs ?? 5_000);
  }
}
