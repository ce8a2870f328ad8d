import { describe, expect, it } from 'vitest';
import { DevshardErrorCode } from '../../errors.js';
import { TimeoutReason } from '../../proto/tx-messages.js';
import { expectRejected, run } from '../../testing/drive.js';
import { confirmTx, keyN, makeFixture, startTx, timeoutTx } from '../../testing/session-fixture.js';
import { InferenceStatus } from '../types.js';

// 5 slots, vote threshold 1: accept weight must be ≥ 2.
describe('TimeoutInference (§5.4)', () => {
  it('refused: Pending → TimedOut, full refund, executor missed', () => {
    const f = makeFixture({ tag: 'v5' });
    const s = run(f, [[startTx(1n)], [timeoutTx(f, 1n, TimeoutReason.Refused)]]);
    expect(s.inferences.get(1n)!.status).toBe(InferenceStatus.TimedOut);
    expect(s.balance).toBe(1_000_000n);
    expect(s.hostStats[1]!.missed).toBe(1);
  });

  it('execution: Started → TimedOut', () => {
    const f = makeFixture({ tag: 'v5' });
    const s = run(f, [[startTx(1n)], [confirmTx(f, 1n)], [timeoutTx(f, 1n, TimeoutReason.Execution)]]);
    expect(s.inferences.get(1n)!.status).toBe(InferenceStatus.TimedOut);
  });

  it('rejects a reason that does not match the status', () => {
    const f = makeFixture({ tag: 'v5' });
    const pending = run(f, [[startTx(1n)]]);
    expectRejected(
      f,
      pending,
      [timeoutTx(f, 1n, TimeoutReason.Execution)],
      DevshardErrorCode.InvalidTimeoutReason,
    );
    expectRejected(
      f,
      pending,
      [timeoutTx(f, 1n, TimeoutReason.Unspecified)],
      DevshardErrorCode.InvalidTimeoutReason,
    );
    const started = run(f, [[confirmTx(f, 1n)]], {}, pending);
    expectRejected(
      f,
      started,
      [timeoutTx(f, 1n, TimeoutReason.Refused)],
      DevshardErrorCode.InvalidTimeoutReason,
    );
  });

  it('needs accept weight above the threshold; rejecting votes are checked but not counted', () => {
    const f = makeFixture({ tag: 'v5' });
    const s = run(f, [[startTx(1n)]]);
    expectRejected(
      f,
      s,
      [timeoutTx(f, 1n, TimeoutReason.Refused, [{ slot: 0 }])],
      DevshardErrorCode.InsufficientVotes,
    );
    expectRejected(
      f,
      s,
      [timeoutTx(f, 1n, TimeoutReason.Refused, [{ slot: 0 }, { slot: 2, accept: false }])],
      DevshardErrorCode.InsufficientVotes,
    );
    expectRejected(
      f,
      s,
      [
        timeoutTx(f, 1n, TimeoutReason.Refused, [
          { slot: 0 },
          { slot: 2 },
          { slot: 3, accept: false, signer: f.hosts[4] },
        ]),
      ],
      DevshardErrorCode.InvalidVoteSig,
    );
  });

  it('weighs votes by the slots of the address and refuses a second vote from the same address', () => {
    // Host 0 owns slots 0 and 2: its single vote weighs 2 > threshold 1.
    const f = makeFixture({
      tag: 'v5',
      slots: (h) => [h[0]!.address, h[1]!.address, h[0]!.address, h[3]!.address, h[4]!.address],
    });
    const s = run(f, [[startTx(1n)], [timeoutTx(f, 1n, TimeoutReason.Refused, [{ slot: 0 }])]]);
    expect(s.inferences.get(1n)!.status).toBe(InferenceStatus.TimedOut);
    const s2 = run(f, [[startTx(3n)]], {}, s);
    expectRejected(
      f,
      s2,
      [timeoutTx(f, 3n, TimeoutReason.Refused, [{ slot: 0 }, { slot: 2, signer: f.hosts[0] }])],
      DevshardErrorCode.DuplicateVote,
    );
  });

  it('rejects a voter slot outside the group and a foreign signature', () => {
    const f = makeFixture({ tag: 'v5' });
    const s = run(f, [[startTx(1n)]]);
    expectRejected(
      f,
      s,
      [timeoutTx(f, 1n, TimeoutReason.Refused, [{ slot: 0 }, { slot: 7, signer: f.hosts[0] }])],
      DevshardErrorCode.SlotNotInGroup,
    );
    expectRejected(
      f,
      s,
      [timeoutTx(f, 1n, TimeoutReason.Refused, [{ slot: 0 }, { slot: 2, signer: keyN(300) }])],
      DevshardErrorCode.InvalidVoteSig,
    );
  });

  it('accepts domain-tagged votes (later revision) and pins the style per session (§12 #6)', () => {
    const f = makeFixture({ tag: 'v5' });
    const tagged = [
      { slot: 0, style: 'tagged' as const },
      { slot: 2, style: 'tagged' as const },
    ];
    const s = run(f, [[startTx(1n)], [timeoutTx(f, 1n, TimeoutReason.Refused, tagged)]]);
    expect(s.voteSigStyle).toBe('tagged');
    const s2 = run(f, [[startTx(3n)]], {}, s);
    expectRejected(f, s2, [timeoutTx(f, 3n, TimeoutReason.Refused)], DevshardErrorCode.InvalidVoteSig);
  });
});
