import { describe, expect, it } from 'vitest';
import { foldSealedAcc } from '../hash/rest-hash.js';
import { SessionPhase } from '../hash/root-formula.js';
import { txOf } from '../proto/tx-builders.js';
import { TimeoutReason } from '../proto/tx-messages.js';
import { run } from '../testing/drive.js';
import { confirmTx, finishTx, makeFixture, startTx, timeoutTx } from '../testing/session-fixture.js';
import { updateRecord } from './record.js';
import { InferenceStatus } from './types.js';

const empties = (n: number) => Array.from({ length: n }, () => []);

describe('auto-seal (§5.6)', () => {
  it('seals a terminal record at the nonce gate and folds it into sealed_acc', () => {
    const f = makeFixture({ tag: 'v5', config: { sealGraceNonces: 4n } });
    const s = run(f, [
      [startTx(1n)],
      [confirmTx(f, 1n)],
      [startTx(3n)],
      [confirmTx(f, 3n)],
      [timeoutTx(f, 1n, TimeoutReason.Execution)],
    ]);
    // Nonce 5 = 1 + 4: the TimedOut record 1 seals; record 3 (Started) stays.
    expect([...s.inferences.keys()]).toEqual([3n]);
    const before = run(f, [[startTx(1n)], [confirmTx(f, 1n)], [startTx(3n)], [confirmTx(f, 3n)]]);
    const timedOut = updateRecord(before.inferences.get(1n)!, { status: InferenceStatus.TimedOut });
    expect(s.sealedAcc).toEqual(foldSealedAcc(new Uint8Array(32), 5n, 1n, timedOut.entry));
  });

  it('seals nothing while no live record is confirmed (unknown state clock)', () => {
    const f = makeFixture({ tag: 'v5', config: { sealGraceNonces: 1n } });
    const s = run(f, [[startTx(1n)], [timeoutTx(f, 1n, TimeoutReason.Refused)], [], []]);
    expect(s.inferences.has(1n)).toBe(true);
    // A confirmed record gives the clock; the TimedOut one then seals.
    const t = run(f, [[startTx(5n)], [confirmTx(f, 5n)]], {}, s);
    expect(t.inferences.has(1n)).toBe(false);
  });

  it('gates Finished records on grace + execution_timeout in v5, grace only in v4', () => {
    const steps = (f: ReturnType<typeof makeFixture>) => [
      [startTx(1n)],
      [confirmTx(f, 1n, { confirmedAt: 1000n })],
      [finishTx(f, 1n)],
      [startTx(4n)],
      [confirmTx(f, 4n, { confirmedAt: 1150n })],
    ];
    const config = { sealGraceNonces: 1n, sealGraceSeconds: 100n, executionTimeout: 100n };
    const v5 = makeFixture({ tag: 'v5', config });
    expect(run(v5, steps(v5)).inferences.has(1n)).toBe(true); // clock 1150 − 1000 < 200
    const v4 = makeFixture({ tag: 'v4.1', config });
    expect(run(v4, steps(v4)).inferences.has(1n)).toBe(false); // ≥ 100
  });

  it('runs only at multiples of the interval', () => {
    const f = makeFixture({ tag: 'v5', config: { sealGraceNonces: 1n, autoSealEveryNNonces: 4n } });
    const s = run(f, [[startTx(1n)], [confirmTx(f, 1n)], [timeoutTx(f, 1n, TimeoutReason.Execution)]]);
    expect(s.inferences.has(1n)).toBe(true);
    expect(run(f, [[]], {}, s).inferences.has(1n)).toBe(false);
  });
});

describe('settlement drain (§5.6, §5.5)', () => {
  it('enters Settlement at finalize nonce + N and charges open reservations in full', () => {
    const f = makeFixture({ tag: 'v5', config: { sealGraceNonces: 100n } });
    const s = run(f, [
      [startTx(1n)],
      [startTx(2n)],
      [confirmTx(f, 2n)],
      [txOf.finalizeRound()],
      ...empties(4),
    ]);
    expect(s.phase).toBe(SessionPhase.Finalizing);
    expect(s.finalizeNonce).toBe(4n);
    const settled = run(f, [[]], {}, s);
    expect(settled.phase).toBe(SessionPhase.Settlement);
    expect(settled.latestNonce).toBe(9n);
    expect(settled.inferences.size).toBe(0);
    expect(settled.hostStats[1]!.cost).toBe(150n);
    expect(settled.hostStats[2]!.cost).toBe(150n);
    expect(settled.hostStats.every((h) => h.missed === 0)).toBe(true);
    expect(settled.balance).toBe(s.balance);
  });

  it('still applies confirms and finishes while Finalizing', () => {
    const f = makeFixture({ tag: 'v5' });
    const s = run(f, [[startTx(1n)], [txOf.finalizeRound()], [confirmTx(f, 1n)], [finishTx(f, 1n)]]);
    expect(s.phase).toBe(SessionPhase.Finalizing);
    expect(s.inferences.get(1n)!.status).toBe(InferenceStatus.Finished);
  });
});
