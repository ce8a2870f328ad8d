// The hedge budget (apps/proxy README "Deadlines, hedged attempts and host health"): extra attempts —
// hedges after a missed deadline and retries after a failure — spend from a token bucket that every
// chat request fills by GATEWAY_HEDGE_BUDGET_PERCENT / 100 and time fills by
// GATEWAY_HEDGE_MIN_PER_MINUTE. When failures pile up the bucket runs dry and requests are answered
// with what their first attempt gave, so a broken network cannot multiply spending (gRPC's
// retryThrottling, Finagle's retry budget).
export class HedgeBudget {
  #tokens: number;
  #at: number;
  readonly #share: number;
  readonly #perMs: number;
  readonly #cap: number;

  constructor(
    o: { readonly percent: number; readonly minPerMinute: number },
    private readonly now: () => number = () => performance.now(),
  ) {
    this.#share = o.percent / 100;
    this.#perMs = o.minPerMinute / 60_000;
    // At most a minute's floor plus the share of 100 requests can be saved up for a burst.
    this.#cap = Math.max(1, o.minPerMinute + this.#share * 100);
    this.#tokens = this.#cap;
    this.#at = now();
  }

  #refill(): void {
    const at = this.now();
    this.#tokens = Math.min(this.#cap, this.#tokens + (at - this.#at) * this.#perMs);
    this.#at = at;
  }

  /** One chat request arrived. */
  deposit(): void {
    this.#tokens = Math.min(this.#cap, this.#tokens + this.#share);
  }

  /** Takes one extra attempt; false when the budget is spent. */
  take(): boolean {
    this.#refill();
    // Shares are added as fractions (0.1 ten times is 0.9999…): a hair below one counts as one.
    if (this.#tokens < 1 - 1e-9) return false;
    this.#tokens = Math.max(0, this.#tokens - 1);
    return true;
  }

  get available(): number {
    this.#refill();
    return this.#tokens;
  }
}
