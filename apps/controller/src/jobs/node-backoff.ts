// Scheduled passes that need the public node or the chain REST (the rotation tick, the chain phase):
// after a run failed because the node could not answer (a ChainError), the next runs of that pass are
// skipped for a delay that doubles with each failure, from the pass's period up to `maxMs`, so an
// outage costs one query per delay instead of one per tick, and one log line (marker
// `node_unreachable`) instead of a failed job per tick. The first run that succeeds ends it (marker
// `node_reachable_again`). Nothing else of the controller waits for the node (docs/operator-guide.md
// "When the public node is down").
import { ChainError } from '@gonka-gateway/chain';
import type { Logger } from '@gonka-gateway/shared';

export interface NodeBackoffOptions {
  /** The pass, in log lines. */
  name: string;
  /** The pass's period: the first delay. */
  everyMs: number;
  /** The longest delay (default 60 s). */
  maxMs?: number;
  logger: Pick<Logger, 'info' | 'warn'>;
  now?: () => number;
}

/** What a skipped or node-failed run returns (the job completes; the log line says the rest). */
export interface NodeWait {
  waitingForNode: true;
  retryInMs: number;
}

export class NodeBackoff {
  readonly #o: NodeBackoffOptions;
  #failures = 0;
  #nextAt = 0;
  #lastError: unknown;

  constructor(options: NodeBackoffOptions) {
    this.#o = options;
  }

  /** Consecutive runs that failed on the node. */
  get failures(): number {
    return this.#failures;
  }

  /**
   * Runs `pass` when due. While the node is out (skipped, or the pass failed on it), `waiting` runs
   * instead with the node's last error and whether this is the outage's first failure; without it
   * the run returns a NodeWait.
   */
  async run<T, W = NodeWait>(
    pass: () => Promise<T>,
    waiting?: (err: unknown, first: boolean) => Promise<W>,
  ): Promise<T | W | NodeWait> {
    const now = this.#o.now ?? Date.now;
    if (now() < this.#nextAt) {
      return waiting
        ? waiting(this.#lastError, false)
        : { waitingForNode: true, retryInMs: this.#nextAt - now() };
    }
    try {
      const result = await pass();
      if (this.#failures > 0) {
        this.#o.logger.info(
          { marker: 'node_reachable_again', pass: this.#o.name, failures: this.#failures },
          'public node answers again: the pass runs on its schedule',
        );
      }
      this.#failures = 0;
      this.#nextAt = 0;
      this.#lastError = undefined;
      return result;
    } catch (err) {
      if (!(err instanceof ChainError)) throw err;
      this.#failures++;
      this.#lastError = err;
      const delay = Math.min(this.#o.maxMs ?? 60_000, this.#o.everyMs * 2 ** (this.#failures - 1));
      this.#nextAt = now() + delay;
      const first = this.#failures === 1;
      if (first) {
        this.#o.logger.warn(
          { marker: 'node_unreachable', pass: this.#o.name, err: err.message, retryInMs: delay },
          'public node or chain REST unreachable: the pass backs off until it answers',
        );
      }
      return waiting ? waiting(err, first) : { waitingForNode: true, retryInMs: delay };
    }
  }
}
