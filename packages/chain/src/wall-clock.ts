/** Wall-clock nanoseconds since the Unix epoch (chain-and-network.md §4.5: `Date.now() × 10^6`). */
export const systemClockNs = (): bigint => BigInt(Date.now()) * 1_000_000n;
