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

import { escrowTable } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';
import type postgres from 'postgres';
import { AnnouncedReads } from './announced-reads.js';

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
  #models: ReadonlySet<string> = new Set();
  /** Escrow ids of the last read, as announced on the channel (decimal text). */
  #ids: ReadonlySet<string> = new Set();
  #loaded = false;
  readonly #reads: AnnouncedReads;

  constructor(options: FleetModelsOptions) {
    if (options.subscriber && !options.channel)
      throw new Error('FleetModels: a subscriber needs its channel');
    const sql = options.sql;
    this.#reads = new AnnouncedReads({
      subscriber: options.subscriber,
      channel: options.channel ?? '',
      read: async () => {
        const rows = await escrowTable.listServing(sql);
        this.#ids = new Set(rows.map((r) => r.escrowId.toString()));
        this.#models = new Set(rows.map((r) => r.modelId));
        this.#loaded = true;
      },
      period: () => options.refreshEveryMs ?? 5_000,
      changeGapMs: options.changeGapMs ?? 1_000,
      // An escrow id the last read did not list: a registration or an activation.
      urgent: (message) => !this.#ids.has(message),
      reconnectUrgent: true,
      onError: options.onError,
    });
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

  start(): Promise<void> {
    return this.#reads.start();
  }

  stop(): void {
    this.#reads.stop();
  }

  /** One read; concurrent callers share it. */
  refresh(): Promise<void> {
    return this.#reads.refresh();
  }
}
