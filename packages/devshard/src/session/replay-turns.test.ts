// A long reopen gives the event loop back, so the lease keeps renewing while a long session is
// being replayed (architecture §2 item 1). The owner's lease renews on a timer and expires on a
// local deadline (escrow-runtime EscrowLease); a replay that kept the loop for longer than the TTL
// would let that deadline pass during the open. Here a snapshot is refused, so the session replays
// every diff with signature checks, and a lease with a TTL far shorter than that replay must stay
// valid throughout.
import { performance } from 'node:perf_hooks';
import { beforeAll, describe, expect, it } from 'vitest';
import { newMsg, txOf } from '../proto/tx-builders.js';
import { signDiff } from '../signing/diff.js';
import { defaultRecover, type RecoverFn } from '../signing/primitive.js';
import { composeDiff } from '../state/compose.js';
import { sessionFromEscrow } from '../state/init.js';
import { decodeStateSnapshotSteps, encodeStateSnapshot } from '../state/snapshot.js';
import type { SessionState } from '../state/types.js';
import { ESCROW_ID, setup } from '../testing/session-setup.js';

/**
 * EscrowLease's timing without Redis: renewed every TTL/3 by a timer, valid until the last
 * renewal + TTL − TTL/5; once the deadline passed it is lost for good.
 */
function timerLease(ttlMs: number) {
  const validFor = ttlMs - ttlMs / 5;
  let validUntil = performance.now() + validFor;
  let lost = false;
  let renewals = 0;
  const expired = () => {
    if (performance.now() >= validUntil) lost = true;
    return lost;
  };
  const timer = setInterval(() => {
    if (expired()) return;
    validUntil = performance.now() + validFor;
    renewals++;
  }, ttlMs / 3);
  return {
    guard: () => {
      if (expired()) throw new Error('lease expired');
    },
    get renewals() {
      return renewals;
    },
    stop: () => clearInterval(timer),
  };
}

/** `size` diffs (one Start each, signed by the user) written straight into the store. */
async function longSession(size: number) {
  const t = setup({ amount: 1_000_000_000_000_000n });
  await t.init();
  const { fencingToken } = await t.store.acquire(ESCROW_ID);
  let state: SessionState = sessionFromEscrow(t.record.escrow, {
    tag: t.record.tag,
    chainParams: t.record.chainParams,
  }).state;
  for (let n = 1n; n <= BigInt(size); n++) {
    const start = txOf.startInference(
      newMsg.startInference({
        inferenceId: n,
        promptHash: new Uint8Array(32).fill(7),
        model: 'llama',
        inputLength: 100n,
        maxTokens: 100n,
        startedAt: t.clock.nowSeconds(),
        protocolVersion: 'v5',
      }),
    );
    const composed = composeDiff(state, [start], {}, { withPostStateRoot: true });
    state = composed.state;
    await t.store.appendDiff(
      ESCROW_ID,
      {
        nonce: n,
        diff: signDiff(t.user, ESCROW_ID, composed.diff),
        root: state.root,
        warmKeysBound: composed.effects.warmKeysBound,
      },
      fencingToken,
    );
  }
  return { t, state, fencingToken };
}

describe('replay gives the event loop back', () => {
  // 1 100 diffs with a slowed signature recovery: the replay takes seconds while the lease's TTL is
  // well under a second (and above the scheduling noise of a shared machine).
  const size = 1_100;
  let built: Awaited<ReturnType<typeof longSession>>;
  beforeAll(async () => {
    built = await longSession(size);
  }, 60_000);

  it('a lease with a TTL far shorter than a full replay keeps renewing while the session opens', async () => {
    const { t, state, fencingToken } = built;
    // A snapshot that does not verify: the open falls back to replaying all diffs from nonce 1.
    const bogus = new Uint8Array(64).fill(1);
    await t.store.saveSnapshot(
      ESCROW_ID,
      { nonce: BigInt(size), root: state.root, state: bogus },
      fencingToken,
    );

    const lease = timerLease(600);
    try {
      // Each signature recovery busy-waits 2 ms, so the replay outlasts the TTL however fast the
      // state machine is (it does not grow with live records).
      const slowRecover: RecoverFn = (digest, signature) => {
        const until = performance.now() + 2;
        while (performance.now() < until) {}
        return defaultRecover(digest, signature);
      };
      const s = await t.open({ writeGuard: lease.guard, recover: slowRecover });
      expect(t.events.some((e) => e.type === 'snapshot_rejected')).toBe(true);
      expect(s.latestNonce).toBe(BigInt(size));
      expect(() => lease.guard()).not.toThrow();
      expect(lease.renewals).toBeGreaterThan(0);
      await s.close();
    } finally {
      lease.stop();
    }
  }, 60_000);

  it('decodes a snapshot in steps of live records', () => {
    const { state } = built;
    const steps = decodeStateSnapshotSteps(encodeStateSnapshot(state));
    let yields = 0;
    for (let next = steps.next(); ; next = steps.next()) {
      if (next.done) {
        expect(next.value.root).toEqual(state.root);
        break;
      }
      yields++;
    }
    expect(yields).toBeGreaterThanOrEqual(2);
  });
});
