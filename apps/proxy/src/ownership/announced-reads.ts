// A copy kept current by announcements (architecture §4: proxy memory mirrors Postgres and Redis):
// every writer publishes on a Redis channel; the reader re-reads when told — at once for an
// `urgent` announcement (something this replica cannot serve yet), otherwise at most once per
// changeGapMs, since one read covers every change before it — and on a slow period that catches a
// lost message (a Redis restart). Concurrent callers share one read; an announcement that arrives
// while a read runs is read again after it.
import type { Redis } from 'ioredis';

export interface AnnouncedReadsOptions {
  /** A connection in subscriber mode (may be shared; never closed here). Without one, only the period. */
  readonly subscriber?: Redis | undefined;
  readonly channel: string;
  /** The read itself; its failure is reported and retried on the period. */
  readonly read: () => Promise<void>;
  /** The period until the next unannounced read (may depend on whether a read succeeded). */
  readonly period: () => number;
  /** Non-urgent announcements are read at most this often. */
  readonly changeGapMs: number;
  /** Whether an announcement's payload names something this replica cannot serve yet. */
  readonly urgent: (message: string) => boolean;
  /** Back after a disconnect: whatever was announced meanwhile never arrived (read at once or not). */
  readonly reconnectUrgent: boolean;
  readonly onError?: ((error: Error) => void) | undefined;
}

export class AnnouncedReads {
  readonly #o: AnnouncedReadsOptions;
  #timer: NodeJS.Timeout | undefined;
  /** When the planned read is due (performance.now()). */
  #dueAt = Number.POSITIVE_INFINITY;
  #loading: Promise<void> | undefined;
  /** performance.now() when the last read started. */
  #readAt = Number.NEGATIVE_INFINITY;
  #stopped = false;
  readonly #onMessage = (channel: string, message: string): void => {
    if (channel === this.#o.channel) this.#changed(this.#o.urgent(message));
  };
  readonly #onReconnect = (): void => this.#changed(this.#o.reconnectUrgent);

  constructor(options: AnnouncedReadsOptions) {
    this.#o = options;
  }

  async start(): Promise<void> {
    this.#stopped = false;
    const sub = this.#o.subscriber;
    if (sub) {
      sub.on('message', this.#onMessage);
      sub.on('ready', this.#onReconnect);
      // Subscribed before the first read, so no announcement falls between the two.
      await sub.subscribe(this.#o.channel).catch((error: Error) => this.#o.onError?.(error));
    }
    await this.refresh().catch((error: Error) => this.#o.onError?.(error));
    this.#schedule(this.#o.period());
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#o.subscriber?.off('message', this.#onMessage);
    this.#o.subscriber?.off('ready', this.#onReconnect);
  }

  /** One read; concurrent callers share it. */
  refresh(): Promise<void> {
    this.#loading ??= (async () => {
      this.#readAt = performance.now();
      try {
        await this.#o.read();
      } finally {
        this.#loading = undefined;
      }
    })();
    return this.#loading;
  }

  #changed(urgent: boolean): void {
    if (this.#stopped) return;
    const gap = urgent ? 0 : this.#o.changeGapMs;
    const next = Math.max(0, this.#readAt + gap - performance.now());
    // A read already planned sooner covers this announcement too.
    if (this.#timer && this.#dueAt <= performance.now() + next) return;
    this.#schedule(next);
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#dueAt = performance.now() + delayMs;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#readScheduled();
    }, delayMs);
    this.#timer.unref();
  }

  async #readScheduled(): Promise<void> {
    // A read in progress may have started before the announcement that planned this one.
    await this.#loading?.catch(() => undefined);
    await this.refresh().catch((error: Error) => this.#o.onError?.(error));
    if (!this.#timer) this.#schedule(this.#o.period());
  }
}
