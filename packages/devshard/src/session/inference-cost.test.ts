import { describe, expect, it } from 'vitest';
import { run } from '../testing/drive.js';
import { confirmTx, finishTx, makeFixture, startTx } from '../testing/session-fixture.js';
import { inferenceCostOf } from './inference-cost.js';

describe('inferenceCostOf (usage ledger)', () => {
  it('is the reservation before the Finish and the clamped charge after it', () => {
    const f = makeFixture({ tag: 'v5', config: { tokenPrice: 2n } });
    const pending = run(f, [[startTx(1n)]]);
    expect(inferenceCostOf(pending, 2n)).toBeUndefined();
    const reserved = pending.inferences.get(1n)!.reservedCost;
    expect(inferenceCostOf(pending, 1n)).toEqual({ cost: reserved, final: false });
    const started = run(f, [[confirmTx(f, 1n)]], {}, pending);
    expect(inferenceCostOf(started, 1n)).toEqual({ cost: reserved, final: false });
    const done = run(f, [[finishTx(f, 1n, { inputTokens: 30n, outputTokens: 20n })]], {}, started);
    expect(inferenceCostOf(done, 1n)).toEqual({ cost: 100n, final: true });
    expect(done.balance).toBe(1_000_000n - 100n);
  });
});
