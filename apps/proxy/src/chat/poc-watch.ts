// Whether the network runs PoC now (spec §2.10 DEVSHARD_POC_REQUEST_MODE): read from the
// node's /v1/epochs/latest on a short period. With the mode `off` new chat requests are answered 503
// with Retry-After while PoC runs; `relaxed` serves. An unreadable node keeps the last known state.
// The controller's chain-phase job publishes the same reading to Redis (a hash with a TTL); when that
// copy is there it is used and the node is not asked, so N replicas do not each poll the node.
import { type ChainClient, isPocActive, queryLatestEpoch } from '@gonka-gateway/chain';
import type { Redis } from 'ioredis';

/** The controller's published phase (RedisKeys.chainPhase); absent when no controller wrote it lately. */
export interface PublishedPhase {
  redis: Redis;
  key: string;
}

export class PocWatch {
  #active = false;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(
    private readonly client: ChainClient,
    private readonly everyMs = 2_000,
    private readonly onError?: (error: Error) => void,
    private readonly published?: PublishedPhase,
  ) {}

  get active(): boolean {
    return this.#active;
  }

  async start(): Promise<void> {
    await this.refresh();
    this.#schedule();
  }

  async refresh(): Promise<void> {
    try {
      const copy = this.published ? await this.published.redis.hget(this.published.key, 'poc_active') : null;
      this.#active = copy !== null ? copy === '1' : isPocActive(await queryLatestEpoch(this.client));
    } catch (error) {
      this.onError?.(error as Error);
    }
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => void this.refresh().finally(() => this.#schedule()), this.everyMs);
    this.#timer.unref();
  }
}
