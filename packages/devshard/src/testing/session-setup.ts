// Test support: a session over in-process hosts, 16 slots spread over 5 hosts
// (slot s → host s mod 5: weights 4, 3, 3, 3, 3), real keys, an in-memory store and a test clock.
import { randomUUID } from 'node:crypto';
import type { InferenceInput } from '../session/inference.js';
import { InMemorySessionStore } from '../session/memory-store.js';
import type { SessionEvent } from '../session/session-context.js';
import type { SessionRecord, SessionStore } from '../session/store.js';
import { UserSession, type UserSessionOptions } from '../session/user-session.js';
import type { EscrowRow } from '../state/init.js';
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
    chainParams: { refusalTimeout: 60n, executionTimeout: 1_920n },
  };
  const store: SessionStore = new InMemorySessionStore();
  const net = new InProcessNetwork({
    record,
    hostKeys,
    clock,
    ...(options.maxNonce ? { maxNonce: options.maxNonce } : {}),
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
      onEvent: (e) => events.push(e),
      ...(options.maxNonce ? { maxNonce: options.maxNonce } : {}),
      ...extra,
    });
  return { clock, user, hostKeys, record, store, net, events, open, init: () => store.create(record) };
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
