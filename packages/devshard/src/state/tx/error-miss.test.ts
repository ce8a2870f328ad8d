import { describe, expect, it } from 'vitest';
import { DevshardErrorCode } from '../../errors.js';
import { expectRejected, run } from '../../testing/drive.js';
import { confirmTx, errorMissTx, finishTx, makeFixture, startTx } from '../../testing/session-fixture.js';
import { InferenceStatus } from '../types.js';

describe('ErrorMiss (§5.4)', () => {
  it('unwinds the payment of a Finished inference', () => {
    const f = makeFixture({ tag: 'v5' });
    const done = run(f, [[startTx(1n)], [confirmTx(f, 1n)], [finishTx(f, 1n)]]);
    expect(done.hostStats[1]!.cost).toBe(120n);
    const s = run(f, [[errorMissTx(f, 1n)]], {}, done);
    expect(s.inferences.get(1n)!.status).toBe(InferenceStatus.TimedOut);
    expect(s.hostStats[1]).toMatchObject({ missed: 1, cost: 0n });
    expect(s.balance).toBe(1_000_000n);
  });

  it('requires Finished, a majority, and votes over the recorded response hash', () => {
    const f = makeFixture({ tag: 'v5' });
    const started = run(f, [[startTx(1n)], [confirmTx(f, 1n)]]);
    expectRejected(f, started, [errorMissTx(f, 1n)], DevshardErrorCode.InvalidTransition);
    const done = run(f, [[finishTx(f, 1n)]], {}, started);
    expectRejected(f, done, [errorMissTx(f, 1n, [{ slot: 0 }])], DevshardErrorCode.InsufficientVotes);
    expectRejected(
      f,
      done,
      [errorMissTx(f, 1n, [{ slot: 0 }, { slot: 2 }], new Uint8Array([1]))],
      DevshardErrorCode.InvalidVoteSig,
    );
    expectRejected(f, done, [errorMissTx(f, 5n)], DevshardErrorCode.InferenceNotFound);
  });

  it('is not a transaction of the v4 line', () => {
    const f = makeFixture({ tag: 'v4.1' });
    const done = run(f, [[startTx(1n)], [confirmTx(f, 1n)], [finishTx(f, 1n)]]);
    expectRejected(f, done, [errorMissTx(f, 1n)], DevshardErrorCode.EmptyTx);
  });
});
