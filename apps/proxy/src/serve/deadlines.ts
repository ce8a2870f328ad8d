// Per-attempt deadlines of the serve stage (apps/proxy README "Deadlines, hedged attempts and host
// health"): the receipt deadline (the host's `devshard_receipt` event, devshard-protocol.md §4.4,
// comes before execution), the first-token deadline after the receipt, learned per model and
// input-size bucket from recent successful attempts, and the stall deadline between chunks.
import type { ServingConfig } from '@gonka-gateway/shared';

/** Samples a bucket needs before its deadline is learned rather than the conservative formula. */
export const MIN_SAMPLES = 20;
/** Samples kept per bucket (a window of recent successful attempts). */
const WINDOW = 200;
/** The learned deadline is recomputed at most this often per bucket (as Finagle's backup filter). */
const REFRESH_MS = 3_000;
const LEARNED_FLOOR_MS = 1_000;

/** Input-size buckets in tokens: prefill time grows with the input. */
const BUCKET_LIMITS = [1_000, 8_000, 32_000];

function bucketOf(inputTokens: number): number {
  const i = BUCKET_LIMITS.findIndex((limit) => inputTokens <= limit);
  return i === -1 ? BUCKET_LIMITS.length : i;
}

class Window {
  readonly samples: number[] = [];
  next = 0;
  learned: number | undefined;
  learnedAt = Number.NEGATIVE_INFINITY;

  add(ms: number): void {
    if (this.samples.length < WINDOW) this.samples.push(ms);
    else this.samples[this.next] = ms;
    this.next = (this.next + 1) % WINDOW;
  }

  p99(): number {
    const sorted = [...this.samples].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!;
  }
}

export class Deadlines {
  readonly #windows = new Map<string, Window>();

  constructor(
    private readonly config: Pick<
      ServingConfig,
      'receiptTimeoutMs' | 'firstTokenTimeoutMs' | 'streamStallTimeoutMs'
    >,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Receipt deadline: the configured base, 1 s more per 32,000 input tokens (transfer of the prompt). */
  receiptMs(inputTokens: number): number {
    return this.config.receiptTimeoutMs + 1_000 * Math.floor(inputTokens / 32_000);
  }

  /** The conservative first-token deadline, used until a bucket has MIN_SAMPLES samples. */
  conservativeFirstTokenMs(inputTokens: number): number {
    return this.config.firstTokenTimeoutMs + 1_000 * Math.floor(inputTokens / 10_000);
  }

  /** First-token deadline after the receipt: 2 × p99 + 500 ms of the bucket, within [1 s, 3 × conservative]. */
  firstTokenMs(model: string, inputTokens: number): number {
    const conservative = this.conservativeFirstTokenMs(inputTokens);
    const w = this.#windows.get(`${model}|${bucketOf(inputTokens)}`);
    if (!w || w.samples.length < MIN_SAMPLES) return conservative;
    const at = this.now();
    // The window's figure is cached; the bounds depend on this request's own input size.
    if (w.learned === undefined || at - w.learnedAt >= REFRESH_MS) {
      w.learned = 2 * w.p99() + 500;
      w.learnedAt = at;
    }
    return Math.min(3 * conservative, Math.max(LEARNED_FLOOR_MS, w.learned));
  }

  get stallMs(): number {
    return this.config.streamStallTimeoutMs;
  }

  /** A successful attempt's time from receipt to first content. */
  sample(model: string, inputTokens: number, firstTokenMs: number): void {
    const key = `${model}|${bucketOf(inputTokens)}`;
    let w = this.#windows.get(key);
    if (!w) {
      w = new Window();
      this.#windows.set(key, w);
    }
    w.add(firstTokenMs);
  }
}
