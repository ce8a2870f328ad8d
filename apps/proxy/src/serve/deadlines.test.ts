import { describe, expect, it } from 'vitest';
import { Deadlines, MIN_SAMPLES } from './deadlines.js';

const MODEL = 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8';
const OTHER_MODEL = 'Qwen/Qwen3-32B';
const CONFIG = { receiptTimeoutMs: 5_000, firstTokenTimeoutMs: 6_000, streamStallTimeoutMs: 20_000 };

function deadlines() {
  const clock = { ms: 0 };
  return { d: new Deadlines(CONFIG, () => clock.ms), clock };
}

function feed(d: Deadlines, model: string, inputTokens: number, ms: number, count = MIN_SAMPLES): void {
  for (let i = 0; i < count; i++) d.sample(model, inputTokens, ms);
}

describe('Deadlines', () => {
  it('gives the receipt deadline its base plus 1 s per whole 32,000 input tokens', () => {
    const { d } = deadlines();
    expect([0, 31_999, 32_000, 63_999, 64_000, 100_000].map((t) => d.receiptMs(t))).toEqual([
      5_000, 5_000, 6_000, 6_000, 7_000, 8_000,
    ]);
  });

  it('gives the stall deadline as configured', () => {
    expect(deadlines().d.stallMs).toBe(20_000);
  });

  it('uses the conservative first-token deadline (base + 1 s per 10,000 tokens) until a bucket has 20 samples', () => {
    const { d } = deadlines();
    expect(d.conservativeFirstTokenMs(9_999)).toBe(6_000);
    expect(d.conservativeFirstTokenMs(25_000)).toBe(8_000);
    expect(d.firstTokenMs(MODEL, 500)).toBe(6_000);
    feed(d, MODEL, 500, 200, MIN_SAMPLES - 1);
    expect(d.firstTokenMs(MODEL, 500)).toBe(6_000);
    d.sample(MODEL, 500, 200);
    // 2 × 200 + 500 = 900, raised to the 1 s floor.
    expect(d.firstTokenMs(MODEL, 500)).toBe(1_000);
  });

  it('learns 2 × p99 + 500 ms from the bucket once it has 20 samples', () => {
    const { d } = deadlines();
    for (let i = 1; i <= MIN_SAMPLES; i++) d.sample(MODEL, 500, 100 * i);
    // The slowest of 20 samples is their p99.
    expect(d.firstTokenMs(MODEL, 500)).toBe(2 * 2_000 + 500);
  });

  it('keeps the learned deadline within [1 s, 3 × conservative]', () => {
    const fast = deadlines().d;
    feed(fast, MODEL, 500, 10);
    expect(fast.firstTokenMs(MODEL, 500)).toBe(1_000);

    const slow = deadlines().d;
    feed(slow, MODEL, 500, 60_000);
    expect(slow.firstTokenMs(MODEL, 500)).toBe(3 * 6_000);
  });

  it("caps the learned deadline at 3 × the conservative deadline of the request's own input size", () => {
    const { d } = deadlines();
    // 8,001–32,000 tokens is one bucket, but its conservative deadline grows inside it:
    // 9,000 tokens → 6 s (cap 18 s), 30,000 tokens → 9 s (cap 27 s).
    // Samples of 15 s learn 30.5 s, above both caps; the order of the calls must not matter.
    feed(d, MODEL, 20_000, 15_000);
    expect(d.firstTokenMs(MODEL, 30_000)).toBe(27_000);
    expect(d.firstTokenMs(MODEL, 9_000)).toBe(18_000);

    const other = deadlines().d;
    feed(other, MODEL, 20_000, 15_000);
    expect(other.firstTokenMs(MODEL, 9_000)).toBe(18_000);
    expect(other.firstTokenMs(MODEL, 30_000)).toBe(27_000);
  });

  it('recomputes the learned deadline at most every 3 s', () => {
    const { d, clock } = deadlines();
    feed(d, MODEL, 500, 1_000);
    expect(d.firstTokenMs(MODEL, 500)).toBe(2_500);
    feed(d, MODEL, 500, 2_000, 200);
    clock.ms = 2_999;
    expect(d.firstTokenMs(MODEL, 500)).toBe(2_500);
    clock.ms = 3_000;
    expect(d.firstTokenMs(MODEL, 500)).toBe(4_500);
  });

  it('learns from the last 200 samples only', () => {
    const { d, clock } = deadlines();
    feed(d, MODEL, 500, 5_000, 200);
    expect(d.firstTokenMs(MODEL, 500)).toBe(10_500);
    feed(d, MODEL, 500, 1_500, 199);
    clock.ms = 3_000;
    // One 5 s sample is left in the window: the p99 of 200 is the second slowest.
    expect(d.firstTokenMs(MODEL, 500)).toBe(3_500);
    d.sample(MODEL, 500, 1_500);
    clock.ms = 6_000;
    expect(d.firstTokenMs(MODEL, 500)).toBe(3_500);
  });

  it('keeps a bucket per model and per input size (≤1k, ≤8k, ≤32k, more)', () => {
    const { d } = deadlines();
    feed(d, MODEL, 1_000, 1_000);
    expect(d.firstTokenMs(MODEL, 1)).toBe(2_500);
    expect(d.firstTokenMs(MODEL, 1_000)).toBe(2_500);
    expect(d.firstTokenMs(OTHER_MODEL, 1_000)).toBe(6_000);
    expect(d.firstTokenMs(MODEL, 1_001)).toBe(6_000);

    feed(d, MODEL, 8_000, 2_000);
    expect(d.firstTokenMs(MODEL, 1_001)).toBe(4_500);
    expect(d.firstTokenMs(MODEL, 8_001)).toBe(6_000);

    feed(d, MODEL, 32_000, 3_000);
    expect(d.firstTokenMs(MODEL, 8_001)).toBe(6_500);
    expect(d.firstTokenMs(MODEL, 32_001)).toBe(9_000);

    feed(d, MODEL, 200_000, 4_000);
    expect(d.firstTokenMs(MODEL, 32_001)).toBe(8_500);
    expect(d.firstTokenMs(MODEL, 1_000)).toBe(2_500);
  });
});
