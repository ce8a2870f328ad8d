// Where an escrow's hosts are (devshard-protocol.md §4.1, chain-and-network.md §3.3): the node's
// participants list maps each validator (cold) address to its inference_url; the session's routes
// live under `{inference_url}/devshard/{version}`. Loaded before a session opens and refreshed when
// an address is unknown, so `resolve` (synchronous, as UserSession needs it) answers from memory.
import { type ChainClient, queryParticipants } from '@gonka-gateway/chain';
import { devshardBaseUrl, type HostTarget } from '@gonka-gateway/devshard/session';

export interface HostDirectoryOptions {
  readonly client: ChainClient;
  /** At most one refresh per this period when asked for unknown addresses (default 5 s). */
  readonly minRefreshMs?: number;
}

export class HostDirectory {
  readonly #o: HostDirectoryOptions;
  #urls = new Map<string, string>();
  #refreshedAt = Number.NEGATIVE_INFINITY;
  #refreshing: Promise<void> | undefined;

  constructor(options: HostDirectoryOptions) {
    this.#o = options;
  }

  /** Reads the current participants; concurrent callers share one query. */
  refresh(): Promise<void> {
    this.#refreshing ??= (async () => {
      // Counted from the attempt, so a failing node is not asked again on every resolve.
      this.#refreshedAt = Date.now();
      try {
        const { participants } = await queryParticipants(this.#o.client);
        this.#urls = new Map(participants.map((p) => [p.address, p.inferenceUrl]));
      } finally {
        this.#refreshing = undefined;
      }
    })();
    return this.#refreshing;
  }

  /** Makes sure every address is known (one refresh if some are not, rate-limited). */
  async ensure(addresses: Iterable<string>): Promise<void> {
    const missing = [...addresses].some((a) => !this.#urls.has(a));
    if (!missing) return;
    if (Date.now() - this.#refreshedAt < (this.#o.minRefreshMs ?? 5_000) && this.#refreshing === undefined)
      return;
    await this.refresh();
  }

  /** UserSession's resolveHost: undefined (treated as down) for an address not in the list. */
  resolve = (address: string, version: string): HostTarget | undefined => {
    const url = this.#urls.get(address);
    if (url === undefined) {
      if (
        this.#refreshing === undefined &&
        Date.now() - this.#refreshedAt >= (this.#o.minRefreshMs ?? 5_000)
      ) {
        void this.refresh().catch(() => undefined);
      }
      return undefined;
    }
    return { address, baseUrl: devshardBaseUrl(url, version) };
  };
}
