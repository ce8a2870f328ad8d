// Whether the network runs PoC now (spec §2.10 DEVSHARD_POC_REQUEST_MODE, issue 11 §4): read from the
// node's /v1/epochs/latest on a short period. With the mode `off` new chat requests are answered 503
// with Retry-After while PoC runs; `relaxed` serves. An unreadable node keeps the last known state.
import { type ChainClient, isPocActive, queryLatestEpoch } from '@gonka-gateway/chain';

export class PocWatch {
  #active = false;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(
    private readonly client: ChainClient,
    private readonly everyMs = 2_000,
    private readonly onError?: (error: Error) => void,
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
      this.#active = isPocActive(await queryLatestEpoch(this.client));
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
