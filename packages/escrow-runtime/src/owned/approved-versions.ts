// The chain's approved devshard runtimes (devshard_escrow_params.approved_versions,
// devshard-protocol.md §1) as a replica needs them: to leave unclaimed an escrow bound to a version
// the chain does not approve (hosts serve only approved runtimes, §4.1, and the chain settles only an
// approved tag, §8.4), and to show the approved and supported lists in /v1/status. Read from the
// chain's params only when asked and the last read is older than `maxAgeMs` (concurrent askers share
// one read), so an idle replica does not poll the node. The last answer is kept while the node cannot
// answer, and nothing is refused before a first answer: a node outage never stops serving.
import { performance } from 'node:perf_hooks';
import { type ChainClient, queryInferenceParams } from '@gonka-gateway/chain';
import {
  runtimeVersionFor,
  SUPPORTED_PROTOCOL_VERSIONS,
  unservableVersionReason,
} from '@gonka-gateway/devshard/session';

export interface ApprovedVersionsOptions {
  readonly client: ChainClient;
  /** A read older than this is renewed when asked (default 60 s). */
  readonly maxAgeMs?: number;
  /**
   * How long `refusal` waits for a renewal before it answers from the last read (default 3 s, as
   * HostDirectory waits for participants); no wait while the last read failed.
   */
  readonly waitMs?: number;
  /** A read failed (the last answer stays in use). */
  readonly onError?: (error: Error) => void;
}

/** Both lists as GET /v1/status shows them. */
export interface ProtocolVersionsView {
  /** approved_versions names; null until the chain answered once. */
  readonly approved: readonly string[] | null;
  /** The versions this gateway speaks, best first (devshard SUPPORTED_PROTOCOL_VERSIONS). */
  readonly supported: readonly string[];
  /** The runtime a new escrow binds to now; null when none is supported, or before the first read. */
  readonly bound: string | null;
  /** When the approved list was last read (ms since the epoch); null before the first read. */
  readonly readAtMs: number | null;
}

export class ApprovedVersions {
  readonly #o: ApprovedVersionsOptions;
  #approved: readonly { name: string }[] | undefined;
  #readAtMs: number | null = null;
  /** Monotonic time of the last attempt, so a failing node is not asked on every call. */
  #attemptedAt = Number.NEGATIVE_INFINITY;
  #refreshing: Promise<void> | undefined;
  #nodeDown = false;

  constructor(options: ApprovedVersionsOptions) {
    this.#o = options;
  }

  /** Reads approved_versions when the last attempt is older than maxAgeMs; never throws. */
  refresh(): Promise<void> {
    if (this.#refreshing) return this.#refreshing;
    if (performance.now() - this.#attemptedAt < (this.#o.maxAgeMs ?? 60_000)) return Promise.resolve();
    this.#attemptedAt = performance.now();
    this.#refreshing = (async () => {
      try {
        const params = await queryInferenceParams(this.#o.client);
        this.#approved = params.devshardEscrow.approvedVersions.map((v) => ({ name: v.name }));
        this.#readAtMs = Date.now();
        this.#nodeDown = false;
      } catch (error) {
        this.#nodeDown = true;
        this.#o.onError?.(error as Error);
      } finally {
        this.#refreshing = undefined;
      }
    })();
    return this.#refreshing;
  }

  /** The lists as last read; never waits (a stale list is renewed in the background). */
  view(): ProtocolVersionsView {
    void this.refresh();
    const approved = this.#approved;
    return {
      approved: approved ? approved.map((v) => v.name) : null,
      supported: SUPPORTED_PROTOCOL_VERSIONS,
      bound: approved ? (runtimeVersionFor(approved) ?? null) : null,
      readAtMs: this.#readAtMs,
    };
  }

  /**
   * Why an escrow bound to runtime `version` must not be served (it names the approved and the
   * supported versions), or undefined: approved, an empty list (any version), or no answer yet.
   */
  async refusal(version: string): Promise<string | undefined> {
    const read = this.refresh();
    const waitMs = this.#nodeDown ? 0 : (this.#o.waitMs ?? 3_000);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([read, new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
    return this.#approved ? unservableVersionReason(version, this.#approved) : undefined;
  }
}
