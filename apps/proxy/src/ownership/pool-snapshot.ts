// This replica's copy of the fleet's pool (architecture §4: "a snapshot of the pool" in proxy
// memory): every escrow's pool state and the live replicas, so routing, /v1/models and /v1/status
// never wait on Redis per request. Every pool write (owners, controller) publishes on `pool:changes`;
// the snapshot re-reads when told, at most once per changeGapMs, and otherwise on a slow period that
// catches a lost message (Redis restart) and replicas whose registration expired. A short fixed
// period cost every idle replica ten Redis round trips a second for a pool that did not change.
// An announcement about an escrow this replica cannot route to yet (not in the snapshot, or not
// active with an owner: just registered, just claimed) is read at once, not after the gap: a new
// escrow serves on every replica as soon as its owner has published it. Until the first read
// succeeds (readiness waits for it), a failed read is retried every second.

import type { LiveReplica, ReplicaDirectory } from '@gonka-gateway/escrow-runtime';
import { decodePoolState, type PoolEscrowState, type RedisKeys } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';
import { AnnouncedReads } from './announced-reads.js';

export interface PoolSnapshotOptions {
  readonly redis: Redis;
  readonly keys: RedisKeys;
  readonly directory: Pick<ReplicaDirectory, 'live'>;
  /**
   * A connection in subscriber mode (the app's, shared with the settings) for `pool:changes`. Without
   * one the snapshot is only as fresh as refreshEveryMs.
   */
  readonly subscriber?: Redis;
  /** Re-read period when no change is announced (default 5 s; at most 1 s until the first read succeeded). */
  readonly refreshEveryMs?: number;
  /**
   * Announced changes are read at most this often (default 500 ms): a busy owner publishes its
   * progress every 200 ms per escrow, and one read covers every change before it.
   */
  readonly changeGapMs?: number;
  readonly onError?: (error: Error) => void;
  /** Called with every read's escrows (the key directory prices escrows it has not seen). */
  readonly onRead?: (escrows: readonly PoolEscrowState[]) => void;
}

/** Retry period of a failed first read: readiness (routes/health.ts) waits for one to succeed. */
const FIRST_READ_RETRY_MS = 1_000;

export class PoolSnapshot {
  readonly #o: PoolSnapshotOptions;
  #escrows: readonly PoolEscrowState[] = [];
  /** The models of #escrows, made once per read: every chat request asks. */
  #models: ReadonlySet<string> = new Set();
  /** Escrows other replicas can forward to (active, with an owner); made once per read. */
  #routable: ReadonlySet<string> = new Set();
  #replicas: readonly LiveReplica[] = [];
  #loadedAt: number | undefined;
  readonly #reads: AnnouncedReads;

  constructor(options: PoolSnapshotOptions) {
    this.#o = options;
    this.#reads = new AnnouncedReads({
      subscriber: options.subscriber,
      channel: options.keys.poolChanges,
      read: () => this.#read(),
      period: () => {
        const every = this.#o.refreshEveryMs ?? 5_000;
        return this.loaded ? every : Math.min(every, FIRST_READ_RETRY_MS);
      },
      changeGapMs: options.changeGapMs ?? 500,
      // An escrow this replica cannot route to yet: just registered, just claimed.
      urgent: (message) => !this.#routable.has(message),
      reconnectUrgent: false,
      onError: options.onError,
    });
  }

  /** Whether the pool has been read at least once (readiness). */
  get loaded(): boolean {
    return this.#loadedAt !== undefined;
  }

  get escrows(): readonly PoolEscrowState[] {
    return this.#escrows;
  }

  get replicas(): readonly LiveReplica[] {
    return this.#replicas;
  }

  models(): ReadonlySet<string> {
    return this.#models;
  }

  replicaUrl(replicaId: string): string | undefined {
    return this.#replicas.find((r) => r.replicaId === replicaId)?.url;
  }

  start(): Promise<void> {
    return this.#reads.start();
  }

  /** One read; concurrent callers share it. */
  refresh(): Promise<void> {
    return this.#reads.refresh();
  }

  stop(): void {
    this.#reads.stop();
  }

  async #read(): Promise<void> {
    const { redis, keys } = this.#o;
    const models = await redis.smembers(keys.poolModels);
    const ids = [
      ...new Set((await Promise.all(models.map((m) => redis.smembers(keys.poolModel(m))))).flat()),
    ];
    const pipeline = redis.pipeline();
    for (const id of ids) pipeline.hgetall(keys.poolEscrow(BigInt(id)));
    const hashes = ids.length === 0 ? [] : ((await pipeline.exec()) ?? []);
    const escrows: PoolEscrowState[] = [];
    for (const [error, hash] of hashes) {
      if (error) continue;
      try {
        const state = decodePoolState(hash as Record<string, string>);
        if (state) escrows.push(state);
      } catch {
        // a malformed entry is left out, never guessed at
      }
    }
    this.#escrows = escrows;
    this.#models = new Set(escrows.map((e) => e.modelId));
    this.#routable = new Set(
      escrows.filter((e) => e.status === 'active' && e.owner).map((e) => e.escrowId.toString()),
    );
    this.#replicas = await this.#o.directory.live();
    this.#loadedAt = Date.now();
    this.#o.onRead?.(escrows);
  }
}
