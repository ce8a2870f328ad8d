// This replica's copy of the fleet's pool (architecture §4: "a snapshot of the pool" in proxy
// memory): every escrow's pool state and the live replicas, re-read from Redis on a short period and
// on demand, so routing, /v1/models and /v1/status never wait on Redis per request.

import type { LiveReplica, ReplicaDirectory } from '@gonka-gateway/escrow-runtime';
import { decodePoolState, type PoolEscrowState, type RedisKeys } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';

export interface PoolSnapshotOptions {
  readonly redis: Redis;
  readonly keys: RedisKeys;
  readonly directory: Pick<ReplicaDirectory, 'live'>;
  /** Re-read period (default 500 ms). */
  readonly refreshEveryMs?: number;
  readonly onError?: (error: Error) => void;
}

export class PoolSnapshot {
  readonly #o: PoolSnapshotOptions;
  #escrows: readonly PoolEscrowState[] = [];
  /** The models of #escrows, made once per read: every chat request asks (issue 10). */
  #models: ReadonlySet<string> = new Set();
  #replicas: readonly LiveReplica[] = [];
  #loadedAt: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  #loading: Promise<void> | undefined;
  #stopped = false;

  constructor(options: PoolSnapshotOptions) {
    this.#o = options;
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

  async start(): Promise<void> {
    await this.refresh().catch((error: Error) => this.#o.onError?.(error));
    this.#schedule();
  }

  refresh(): Promise<void> {
    this.#loading ??= (async () => {
      try {
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
        this.#replicas = await this.#o.directory.live();
        this.#loadedAt = Date.now();
      } finally {
        this.#loading = undefined;
      }
    })();
    return this.#loading;
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      void this.refresh()
        .catch((error: Error) => this.#o.onError?.(error))
        .finally(() => this.#schedule());
    }, this.#o.refreshEveryMs ?? 500);
    this.#timer.unref();
  }
}
