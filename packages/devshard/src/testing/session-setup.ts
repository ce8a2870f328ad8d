// Test support: a session over in-process hosts, 16 slots spread over 5 hosts
// (slot s → host s mod 5: weights 4, 3, 3, 3, 3), real keys, an in-memory store and a test clock.
import { randomUUID } from 'node:crypto';
import type { InferenceInput } from '../session/inference.js';
import { InMemorySessionStore } from '../session/memory-store.js';
import type { SessionEvent } from '../session/session-context.js';
import { encodeSessionSnapshot } from '../session/snapshots.js';
import type { SessionRecord, SessionStore } from '../session/store.js';
import { UserSession, type UserSessionOptions } from '../session/user-session.js';
import { signDiff } from '../signing/diff.js';
import { composeDiff } from '../state/compose.js';
import type { SessionChainParams } from '../state/config.js';
import { idLogOfRuns } from '../state/id-log.js';
import type { EscrowRow } from '../state/init.js';
import { withRoot } from '../state/root.js';
import type { SessionState } from '../state/types.js';
import { InProcessNetwork, TestClock } from './in-process-hosts.js';
import { keyN } from './session-fixture.js';

export { keyN };

export const START = 1_700_000_000n;
export const ESCROW_ID = '4242';

export interface SetupOptions {
  readonly slots?: number;
  readonly hosts?: number;
  readonly amount?: bigint;
  readonly maxNonce?: bigint;
  readonly row?: Partial<EscrowRow>;
  /** The record's chain params (default: timeouts 60 s and 1,920 s, no max_nonce); its max_nonce binds the hosts too. */
  readonly chainParams?: SessionChainParams;
  /**
   * The store and the hosts keep only about this many diffs of history (a benchmark driving a
   * session to max_nonce measures the session, not their growing logs); default: everything.
   */
  readonly keepHistory?: number;
  /** Hosts at the same root share one apply of each diff (InProcessNetwork shareApplied; benchmarks). */
  readonly shareApplied?: boolean;
}

export function setup(options: SetupOptions = {}) {
  const slotCount = options.slots ?? 16;
  const hostKeys = Array.from({ length: options.hosts ?? 5 }, (_, i) => keyN(i + 1));
  const user = keyN(100);
  const clock = new TestClock(START);
  const escrow: EscrowRow = {
    escrowId: BigInt(ESCROW_ID),
    creator: user.address,
    amount: options.amount ?? 50_000_000n,
    slots: Array.from({ length: slotCount }, (_, s) => hostKeys[s % hostKeys.length]!.address),
    tokenPrice: 10n,
    createDevshardFee: 10_000n,
    feePerNonce: 1_000n,
    inferenceSealGraceNonces: 20n,
    voteThresholdFactor: 50,
    ...options.row,
  };
  const record: SessionRecord = {
    escrowId: ESCROW_ID,
    escrow,
    tag: 'v5',
    version: 'v5',
    chainParams: { refusalTimeout: 60n, executionTimeout: 1_920n, ...options.chainParams },
  };
  const keep = options.keepHistory;
  const hostMaxNonce = options.maxNonce ?? options.chainParams?.maxNonce;
  const store: SessionStore = new InMemorySessionStore(keep === undefined ? {} : { keepDiffs: keep });
  const net = new InProcessNetwork({
    record,
    hostKeys,
    clock,
    ...(hostMaxNonce ? { maxNonce: hostMaxNonce } : {}),
    ...(keep === undefined ? {} : { keepHistory: keep }),
    ...(options.shareApplied ? { shareApplied: true } : {}),
  });
  const events: SessionEvent[] = [];
  const open = (extra: Partial<UserSessionOptions> = {}) =>
    UserSession.open({
      store,
      escrowId: ESCROW_ID,
      signer: user,
      transport: net,
      resolveHost: net.resolveHost,
      clock,
      onEvent: (e) => {
        events.push(e);
        if (keep !== undefined && events.length > 2 * keep) events.splice(0, events.length - keep);
      },
      ...(options.maxNonce ? { maxNonce: options.maxNonce } : {}),
      ...extra,
    });
  return { clock, user, hostKeys, record, store, net, events, open, init: () => store.create(record) };
}

/**
 * Puts a fresh setup's store and hosts at nonce `nonce` without driving every nonce before it (a
 * session past 20,000 in a unit test): the state at `nonce − 1` is the initial one with every earlier
 * nonce's fee paid and its inference sealed (no live record), then one real diff (no txs, the fee
 * only) is composed, signed and applied by every host, and the store holds it with a snapshot there,
 * as if the diffs before had been compacted away, and every host's progress at it. Call before
 * `open`, instead of `init`.
 */
export async function fastForward(t: ReturnType<typeof setup>, nonce: bigint): Promise<SessionState> {
  const initial = t.net.hosts.values().next().value!.state;
  const skipped = nonce - 1n;
  const paid = skipped * initial.config.feePerNonce;
  const { liveHash: _live, root: _root, ...working } = initial;
  const before = withRoot({
    ...working,
    latestNonce: skipped,
    balance: initial.balance - paid,
    fees: initial.fees + paid,
    startedIds: idLogOfRuns([1n, skipped]),
  });
  const composed = composeDiff(before, []);
  const diff = signDiff(t.user, initial.escrowId, composed.diff);
  const state = composed.state;
  for (const host of t.net.hosts.values()) {
    host.state = state;
    host.roots.set(nonce, state.root);
    host.diffs.push(diff);
  }
  (t.store as InMemorySessionStore).seed(
    t.record,
    { nonce, root: state.root, state: encodeSessionSnapshot(state, undefined) },
    { nonce, diff, root: state.root, warmKeysBound: [] },
  );
  // Every host holds it (host_sync_nonce, §7.1), as a session that got there would know.
  const hostProgress = [...t.net.hosts.keys()].map((address) => ({ address, nonce }));
  await t.store.saveWrites(t.record.escrowId, { hostProgress }, 0n);
  return state;
}

/** A chat body with a unique prompt. */
export function request(maxTokens = 100n): InferenceInput {
  const content = `hello ${randomUUID()}`;
  return {
    body: new TextEncoder().encode(
      JSON.stringify({
        model: 'llama',
        messages: [{ role: 'user', content }],
        max_tokens: Number(maxTokens),
      }),
    ),
    model: 'llama',
    inputLength: 30n,
    maxTokens,
  };
}

/** Runs inferences until the next nonce belongs to one of `slots`. */
export async function advanceTo(s: UserSession, slots: readonly number[]): Promise<void> {
  const n = BigInt(s.state.group.slots.length);
  while (!slots.includes(Number((s.latestNonce + 1n) % n))) await s.infer(request());
}
