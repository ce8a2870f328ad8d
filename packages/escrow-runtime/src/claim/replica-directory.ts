// Live replicas (architecture §2.2, §2.4): each replica keeps `replica:{id}` = its internal URL with a
// TTL it refreshes, so a replica that dies disappears from the directory by itself. The claim loop
// divides escrows by the number of live replicas; the proxy forwards to an owner by its URL.
import type { RedisKeys } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';

export interface LiveReplica {
  readonly replicaId: string;
  readonly url: string;
}

export interface ReplicaDirectoryOptions {
  readonly redis: Redis;
  readonly keys: RedisKeys;
  readonly replicaId: string;
  readonly url: string;
  readonly ttlMs: number;
  /** Refresh period (default TTL/3). */
  readonly refreshEveryMs?: number;
  readonly onError?: (error: Error) => void;
}

export class ReplicaDirectory {
  readonly #o: ReplicaDirectoryOptions;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: ReplicaDirectoryOptions) {
    this.#o = options;
  }

  get replicaId(): string {
    return this.#o.replicaId;
  }

  /** Registers now and keeps the registration alive until stop(). */
  async start(): Promise<void> {
    await this.register();
    this.#schedule();
  }

  /** SET replica:{id} url PX ttl (also restores it after Redis lost its data). */
  async register(): Promise<void> {
    await this.#o.redis.set(this.#o.keys.replica(this.#o.replicaId), this.#o.url, 'PX', this.#o.ttlMs);
  }

  /** Every replica whose registration has not expired (this one included once registered). */
  async live(): Promise<LiveReplica[]> {
    const { redis, keys } = this.#o;
    const found: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await redis.scan(cursor, 'MATCH', keys.replicaPattern, 'COUNT', 500);
      found.push(...batch);
      cursor = next;
    } while (cursor !== '0');
    if (found.length === 0) return [];
    const urls = await redis.mget(...found);
    const prefix = keys.replica('');
    const replicas: LiveReplica[] = [];
    found.forEach((key, i) => {
      const url = urls[i];
      if (url) replicas.push({ replicaId: key.slice(prefix.length), url });
    });
    return replicas.sort((a, b) => (a.replicaId < b.replicaId ? -1 : a.replicaId > b.replicaId ? 1 : 0));
  }

  /** Stops refreshing and removes the registration (a clean shutdown hands its share over at once). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#o.redis.del(this.#o.keys.replica(this.#o.replicaId)).catch(() => 0);
  }

  #schedule(): void {
    if (this.#stopped) return;
    const every = this.#o.refreshEveryMs ?? Math.max(1, Math.floor(this.#o.ttlMs / 3));
    this.#timer = setTimeout(() => {
      this.register()
        .catch((error: Error) => this.#o.onError?.(error))
        .finally(() => this.#schedule());
    }, every);
    this.#timer.unref();
  }
}
