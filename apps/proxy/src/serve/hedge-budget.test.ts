import { describe, expect, it } from 'vitest';
import { HedgeBudget } from './hedge-budget.js';

function budget(o: { percent: number; minPerMinute: number }) {
  const clock = { ms: 1_000 };
  return { b: new HedgeBudget(o, () => clock.ms), clock };
}

function drain(b: HedgeBudget): number {
  let taken = 0;
  while (b.take()) taken++;
  return taken;
}

describe('HedgeBudget', () => {
  it('starts full at its cap: a minute of the floor plus the share of 100 requests', () => {
    const { b } = budget({ percent: 10, minPerMinute: 20 });
    expect(b.available).toBe(30);
    expect(drain(b)).toBe(30);
    expect(b.take()).toBe(false);
  });

  it('spends one token per extra attempt and refuses below one', () => {
    const { b } = budget({ percent: 50, minPerMinute: 0 });
    expect(b.available).toBe(50);
    expect(b.take()).toBe(true);
    expect(b.available).toBe(49);
    drain(b);
    b.deposit();
    expect(b.available).toBe(0.5);
    expect(b.take()).toBe(false);
    expect(b.available).toBe(0.5);
    b.deposit();
    expect(b.take()).toBe(true);
    expect(b.available).toBe(0);
  });

  it('adds percent / 100 per request', () => {
    const { b } = budget({ percent: 25, minPerMinute: 0 });
    drain(b);
    for (let i = 0; i < 3; i++) b.deposit();
    expect(b.available).toBe(0.75);
    expect(b.take()).toBe(false);
    b.deposit();
    expect(b.take()).toBe(true);
  });

  it('pays one extra attempt for every ten requests at 10 %', () => {
    const { b } = budget({ percent: 10, minPerMinute: 0 });
    drain(b);
    // Ten shares of 10 % are one whole extra attempt.
    for (let i = 0; i < 10; i++) b.deposit();
    expect(b.take()).toBe(true);
  });

  it('refills minPerMinute tokens a minute with time', () => {
    const { b, clock } = budget({ percent: 0, minPerMinute: 60 });
    expect(drain(b)).toBe(60);
    clock.ms += 999;
    expect(b.take()).toBe(false);
    clock.ms += 1;
    expect(b.take()).toBe(true);
    expect(b.take()).toBe(false);
    clock.ms += 30_000;
    expect(drain(b)).toBe(30);
  });

  it('never holds more than its cap, from time or from requests', () => {
    const { b, clock } = budget({ percent: 10, minPerMinute: 20 });
    b.take();
    clock.ms += 3_600_000;
    expect(b.available).toBe(30);
    for (let i = 0; i < 1_000; i++) b.deposit();
    expect(b.available).toBe(30);
    expect(drain(b)).toBe(30);
  });

  it('with percent 0 and minPerMinute 0 allows only its initial single token', () => {
    const { b, clock } = budget({ percent: 0, minPerMinute: 0 });
    expect(b.available).toBe(1);
    expect(b.take()).toBe(true);
    for (let i = 0; i < 100; i++) b.deposit();
    clock.ms += 3_600_000;
    expect(b.take()).toBe(false);
    expect(b.available).toBe(0);
  });
});
