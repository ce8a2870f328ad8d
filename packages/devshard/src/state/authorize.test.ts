// The warm-key rule of §5.7 and the later revision's sibling-slot step (§11, authorize.ts): a
// validator holding two slots signs with one warm key. Every step runs through the composer and a
// strict host (`run` checks both reach the same root).
import type { PrivateKey } from '@gonka-gateway/chain';
import { describe, expect, it } from 'vitest';
import { DevshardErrorCode } from '../errors.js';
import { TimeoutReason } from '../proto/tx-messages.js';
import { expectRejected, run } from '../testing/drive.js';
import {
  confirmTx,
  type Fixture,
  keyN,
  makeFixture,
  startTx,
  timeoutTx,
} from '../testing/session-fixture.js';
import type { ApplyContext } from './apply-context.js';
import type { SessionState } from './types.js';

const WARM = keyN(200);
const STRANGER = keyN(201);

/** Slots [h0, h1, h1, h3, h4]: validator h1 holds slots 1 and 2; both keys hold its authz grant. */
function siblings() {
  const f = makeFixture({
    tag: 'v5',
    slots: (h) => [h[0]!, h[1]!, h[1]!, h[3]!, h[4]!].map((k) => k.address),
  });
  const calls: string[] = [];
  const grants = new Set([WARM.address, STRANGER.address]);
  const lookup: ApplyContext = {
    isWarmKey: (cold, signer) => {
      calls.push(signer);
      return cold === f.hosts[1]!.address && grants.has(signer);
    },
  };
  return { f, calls, lookup };
}

/**
 * Inference 1 (slot 1) confirmed by WARM, which binds slot 1; inference 3 timed out by votes in
 * `style` (the evidence of which revision the hosts run); inference 7 (slot 2, the sibling) started.
 */
function siblingCase(f: Fixture, lookup: ApplyContext, style: 'plain' | 'tagged'): SessionState {
  const votes = [
    { slot: 0, style },
    { slot: 4, style },
  ];
  return run(
    f,
    [
      [startTx(1n)],
      [confirmTx(f, 1n, { signer: WARM })],
      [startTx(3n)],
      [timeoutTx(f, 3n, TimeoutReason.Refused, votes)],
      [],
      [],
      [startTx(7n)],
    ],
    lookup,
  );
}

const confirmBy = (f: Fixture, id: bigint, signer: PrivateKey) => confirmTx(f, id, { signer });

describe('warm keys on sibling slots (§5.7, §11)', () => {
  it('pinned v5: a sibling slot asks the chain and binds the warm key again', () => {
    const { f, calls, lookup } = siblings();
    const s = siblingCase(f, lookup, 'plain');
    expect(s.voteSigStyle).toBe('plain');
    expect([...s.warmKeys]).toEqual([[1, WARM.address]]);
    calls.length = 0;
    const next = run(f, [[confirmBy(f, 7n, WARM)]], lookup, s);
    expect(new Set(calls)).toEqual(new Set([WARM.address]));
    expect([...next.warmKeys]).toEqual([
      [1, WARM.address],
      [2, WARM.address],
    ]);
    // Without the chain's answer the sibling's binding does not count here.
    expectRejected(f, s, [confirmBy(f, 7n, WARM)], DevshardErrorCode.InvalidExecutorSig);
  });

  it('later revision: the sibling binding answers from state, with no lookup and no new binding', () => {
    const { f, calls, lookup } = siblings();
    const s = siblingCase(f, lookup, 'tagged');
    expect(s.voteSigStyle).toBe('tagged');
    calls.length = 0;
    const next = run(f, [[confirmBy(f, 7n, WARM)]], lookup, s);
    expect(calls).toEqual([]);
    expect([...next.warmKeys]).toEqual([[1, WARM.address]]);
    // The same without any chain lookup at all (a replica replaying, or one whose node is down).
    const offline = run(f, [[confirmBy(f, 7n, WARM)]], {}, s);
    expect(offline.root).toEqual(next.root);
    // The two revisions disagree on the root: the rule must match the hosts'.
    expect(run(f, [[confirmBy(f, 7n, WARM)]], lookup, { ...s, voteSigStyle: 'plain' }).root).not.toEqual(
      next.root,
    );
  });

  it('later revision: a warm key bound on no sibling still needs the chain, and a bound slot stays exclusive', () => {
    const { f, calls, lookup } = siblings();
    const s = siblingCase(f, lookup, 'tagged');
    // STRANGER is granted but bound nowhere: the lookup decides and binds slot 2.
    calls.length = 0;
    const stranger = run(f, [[confirmBy(f, 7n, STRANGER)]], lookup, s);
    expect(new Set(calls)).toEqual(new Set([STRANGER.address]));
    expect(stranger.warmKeys.get(2)).toBe(STRANGER.address);
    // Slot 2 bound to STRANGER: WARM (bound on sibling slot 1) is refused for it, without a lookup.
    const again = run(f, [[], [], [], [startTx(12n)]], lookup, stranger);
    calls.length = 0;
    expectRejected(f, again, [confirmBy(f, 12n, WARM)], DevshardErrorCode.InvalidExecutorSig, lookup);
    expect(calls).toEqual([]);
    // The cold key always acts for its own slot.
    expect(run(f, [[confirmBy(f, 12n, f.hosts[1]!)]], {}, again).inferences.get(12n)?.status).toBe(1);
    // A warm key bound on another validator's slot is no sibling.
    const other = run(f, [[startTx(13n)]], {}, again);
    expectRejected(f, other, [confirmBy(f, 13n, WARM)], DevshardErrorCode.InvalidExecutorSig);
  });
});
