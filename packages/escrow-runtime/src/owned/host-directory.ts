// Where an escrow's hosts are (devshard-protocol.md §4.1, chain-and-network.md §3.3): the node's
// participants list maps each validator (cold) address to its inference_url; the session's routes
// live under `{inference_url}/devshard/{version}`. Loaded before a session opens and refreshed when
// an address is unknown, so `resolve` (synchronous, as UserSession needs it) answers from memory.
//
// The public node is a third party and will be down at times. An escrow's group is frozen for its
// life, so with `stored` the URLs of its participants are kept in Postgres (escrow_hosts) once a
// session opened with the node's answer (`remember`), rewritten when the node later answers with
// another URL, and read back when the node cannot answer (`prepareFor`): a takeover, a restart or a
// finalize then opens the session from the stored copy and says so (`onStoredCopy`; the log marker
// `node_unreachable_stored_copy`, docs/operator-guide.md §9). When the node answers, its list wins.
import { type ChainClient, queryParticipants } from '@gonka-gateway/chain';
import { devshardBaseUrl, type HostTarget } from '@gonka-gateway/devshard/session';
import type { StoredHosts } from './stored-hosts.js';

export interface StoredCopyUse {
  readonly escrowId: bigint;
  /** Participants the stored copy holds for the escrow. */
  readonly hosts: number;
  /** Why the node was not used (its error, or a timeout). */
  readonly error: unknown;
}

export interface HostDirectoryOptions {
  readonly client: ChainClient;
  /** At most one refresh per this period when asked for unknown addresses (default 5 s). */
  readonly minRefreshMs?: number;
  /** The escrows' stored copies (escrow_hosts); without it a session opens only with the node. */
  readonly stored?: StoredHosts;
  /**
   * How long `prepareFor` waits for the node before it opens from the stored copy (default 3 s). While
   * the last read failed it does not wait at all (the read goes on in the background).
   */
  readonly nodeWaitMs?: number;
  /** A session is about to open from the stored copy because the node did not answer. */
  readonly onStoredCopy?: (use: StoredCopyUse) => void;
  /** Writing a stored copy failed (the session still opens; the next open or refresh writes it). */
  readonly onError?: (error: Error) => void;
}

class NodeWaitTimeout extends Error {
  override name = 'NodeWaitTimeout';
}

export class HostDirectory {
  readonly #o: HostDirectoryOptions;
  /** The node's last answer. */
  #urls = new Map<string, string>();
  /** Stored copies loaded while the node could not answer; dropped at its next answer. */
  #fallback = new Map<string, string>();
  /** Escrows whose participants are stored (what was stored last), rewritten when the node changes one. */
  readonly #tracked = new Map<bigint, { addresses: readonly string[]; stored: Map<string, string> }>();
  #refreshedAt = Number.NEGATIVE_INFINITY;
  #refreshing: Promise<void> | undefined;
  /** The last read failed (and none succeeded since). */
  #nodeDown = false;

  constructor(options: HostDirectoryOptions) {
    this.#o = options;
  }

  /** Whether the last participants read failed. */
  get nodeDown(): boolean {
    return this.#nodeDown;
  }

  /** Reads the current participants; concurrent callers share one query. */
  refresh(): Promise<void> {
    this.#refreshing ??= (async () => {
      // Counted from the attempt, so a failing node is not asked again on every resolve.
      this.#refreshedAt = Date.now();
      try {
        const { participants } = await queryParticipants(this.#o.client);
        this.#urls = new Map(participants.map((p) => [p.address, p.inferenceUrl]));
        this.#fallback.clear();
        this.#nodeDown = false;
      } catch (error) {
        this.#nodeDown = true;
        throw error;
      } finally {
        this.#refreshing = undefined;
      }
      for (const escrowId of this.#tracked.keys()) this.#persist(escrowId);
    })();
    return this.#refreshing;
  }

  /**
   * Before escrow `escrowId`'s session opens: the node's list when it answers in time, else the
   * escrow's stored copy (reported through onStoredCopy). Throws the node's error only when there is
   * no stored copy to open from (the open is then retried by the caller, as before).
   */
  async prepareFor(escrowId: bigint): Promise<void> {
    const { stored } = this.#o;
    if (!stored) return this.refresh();
    const read = this.refresh();
    const waitMs = this.#nodeDown ? 0 : (this.#o.nodeWaitMs ?? 3_000);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        read,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new NodeWaitTimeout(`the node did not answer within ${waitMs} ms`)),
            waitMs,
          );
        }),
      ]);
      return;
    } catch (error) {
      // A read that lands later still updates the list (and rewrites changed copies); until then the
      // node counts as down, so the next open does not wait for it again.
      read.catch(() => undefined);
      if (error instanceof NodeWaitTimeout) this.#nodeDown = true;
      const copy = await stored.load(escrowId);
      if (copy.size === 0) {
        // Nothing stored yet (the escrow never opened with the node's answer): only the node helps.
        if (error instanceof NodeWaitTimeout) return read;
        throw error;
      }
      for (const [address, url] of copy) this.#fallback.set(address, url);
      this.#o.onStoredCopy?.({ escrowId, hosts: copy.size, error });
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * After escrow `escrowId`'s session opened: stores where its participants (`addresses`, the
   * group's slots) serve when the node gave them, and keeps them rewritten while it stays tracked.
   */
  remember(escrowId: bigint, addresses: readonly string[]): void {
    if (!this.#o.stored) return;
    const unique = [...new Set(addresses)];
    const known = this.#tracked.get(escrowId);
    this.#tracked.set(escrowId, { addresses: unique, stored: known?.stored ?? new Map() });
    this.#persist(escrowId, known === undefined);
  }

  /** The escrow's session closed here: its copy is no longer rewritten by this process. */
  forget(escrowId: bigint): void {
    this.#tracked.delete(escrowId);
  }

  /** Makes sure every address is known (one refresh if some are not, rate-limited). */
  async ensure(addresses: Iterable<string>): Promise<void> {
    const missing = [...addresses].some((a) => !this.#known(a));
    if (!missing) return;
    if (Date.now() - this.#refreshedAt < (this.#o.minRefreshMs ?? 5_000) && this.#refreshing === undefined)
      return;
    await this.refresh();
  }

  /** UserSession's resolveHost: undefined (treated as down) for an address not in the list. */
  resolve = (address: string, version: string): HostTarget | undefined => {
    const fresh = this.#urls.get(address);
    const url = fresh ?? this.#fallback.get(address);
    // Unknown, or known only from a stored copy: ask the node again (rate-limited), so its answer
    // replaces the copy once it is back.
    if (
      fresh === undefined &&
      this.#refreshing === undefined &&
      Date.now() - this.#refreshedAt >= (this.#o.minRefreshMs ?? 5_000)
    ) {
      void this.refresh().catch(() => undefined);
    }
    return url === undefined ? undefined : { address, baseUrl: devshardBaseUrl(url, version) };
  };

  #known(address: string): boolean {
    return this.#urls.has(address) || this.#fallback.has(address);
  }

  /**
   * Writes the node's URLs of a tracked escrow's participants that differ from what is stored (all of
   * them the first time this process tracks it: the stored copy may be older). Only the node's own
   * answer is written, never a stored copy back onto itself.
   */
  #persist(escrowId: bigint, first = false): void {
    const tracked = this.#tracked.get(escrowId);
    const stored = this.#o.stored;
    if (!tracked || !stored || this.#nodeDown) return;
    const changed = new Map<string, string>();
    for (const address of tracked.addresses) {
      const url = this.#urls.get(address);
      if (url !== undefined && (first || tracked.stored.get(address) !== url)) changed.set(address, url);
    }
    if (changed.size === 0) return;
    for (const [address, url] of changed) tracked.stored.set(address, url);
    stored.save(escrowId, changed).catch((error: Error) => {
      // Written again by the next refresh or open.
      for (const address of changed.keys()) tracked.stored.delete(address);
      this.#o.onError?.(error);
    });
  }
}
