// The mutable inside of one user-side session, shared by the modules that compose, deliver, time out
// and finalize (each a small file taking this context), in five named parts: what it was opened with,
// the protocol data, work in progress, settlement progress and its lifecycle, each with the files
// that change it. Only user-session.ts builds one; nothing here but the events is exported.
import type { PrivateKey } from '@gonka-gateway/chain';
import type { TxKind } from '../proto/devshard-tx.js';
import type { ApplyContext } from '../state/apply-context.js';
import type { SessionState } from '../state/types.js';
import type { HostTarget, HostTransport } from '../transport/types.js';
import type { Unresolved } from './append.js';
import type { DiffLog } from './diff-log.js';
import type { SessionError } from './errors.js';
import type { RejectReason } from './host-tx-check.js';
import type { KeyedLock, KeyedSemaphore, SerialLock } from './locks.js';
import type { PendingQueue } from './pending-queue.js';
import type { Clock } from './session-clock.js';
import type { WriteBuffer } from './session-writes.js';
import type { SessionRecord, SessionStore } from './store.js';

/** Resolved numeric options (defaults in user-session.ts). */
export interface SessionSettings {
  /**
   * The escrow's max_nonce (§7.5). Set at open; raised once by UserSession.adoptMaxNonce when the
   * session opened on the default and a chain read told the real ceiling later.
   */
  maxNonce: bigint;
  /** New inferences stop this many nonces before max_nonce (reference: 200; at least N + 1). */
  readonly nonceReserve: bigint;
  /** Catch-up chunk size (§7.3: at most 200 diffs). */
  readonly catchUpChunk: bigint;
  /** Extra wait after a protocol deadline for clock skew (§7.4: ~5 s). */
  readonly timeoutSkewSeconds: bigint;
  /** After a vote round without majority, the next attempt waits this long. */
  readonly timeoutRetrySeconds: bigint;
  /** §12 #1: when diffs carry post_state_root. */
  readonly postStateRoot: 'calibrate' | 'always' | 'never';
  /** Tries of a write-ahead whose outcome is unknown (the identical diff each time, §2.3). */
  readonly appendAttempts: number;
  /** Wait before the first retry of such a write, doubled after each. */
  readonly appendRetryMs: number;
  /** After the client went away, how long the host stream is still read for its meta (§5). */
  readonly disconnectTailMs: number;
  /** A snapshot is saved every this many diffs (0 = never; snapshots.ts). */
  readonly snapshotEvery: number;
}

/** What the session reports while it works; the owner logs or counts these. */
export type SessionEvent =
  | {
      readonly type: 'diff';
      readonly nonce: bigint;
      readonly target: string;
      readonly txs: readonly TxKind[];
      readonly dropped: readonly { readonly kind: string; readonly code: string }[];
    }
  | { readonly type: 'receipt'; readonly host: string; readonly nonce: bigint }
  | {
      readonly type: 'host_error';
      readonly host: string;
      readonly operation:
        | 'inference'
        | 'protocol'
        | 'catch-up'
        | 'verify-timeout'
        | 'signatures'
        | 'mempool'
        | 'history-probe';
      readonly nonce?: bigint;
      readonly error: Error;
    }
  | {
      readonly type: 'host_tx_rejected';
      readonly host: string;
      readonly kind: string;
      readonly reason: RejectReason | 'malformed';
    }
  | { readonly type: 'bad_state_signature'; readonly host: string; readonly nonce: bigint }
  | {
      readonly type: 'divergence';
      readonly host: string;
      readonly nonce: bigint;
      readonly expected?: Uint8Array;
      readonly got?: Uint8Array;
    }
  | {
      readonly type: 'timeout';
      readonly inferenceId: bigint;
      readonly reason: 'refused' | 'execution';
      readonly outcome: TimeoutOutcomeKind;
      readonly acceptWeight: number;
    }
  | {
      /** Served-bytes check (served-bytes.ts): the Finish's response_hash vs the bytes received. */
      readonly type: 'served_bytes';
      readonly host: string;
      readonly inferenceId: bigint;
      readonly verdict: 'match' | 'mismatch' | 'truncated';
      readonly claimed: Uint8Array;
      readonly received: Uint8Array;
      readonly bytes: number;
    }
  | {
      /** A dominant host refused or timed out: its nonces are burned from now on (dominant-hosts.ts). */
      readonly type: 'dominant_host_blocked';
      readonly host: string;
      readonly inferenceId: bigint;
    }
  | { readonly type: 'store_error'; readonly operation: string; readonly error: Error }
  /** The session stopped composing for good (emitted once): divergence, rejected diff, ownership lost… */
  | { readonly type: 'faulted'; readonly error: SessionError }
  | { readonly type: 'snapshot_saved'; readonly nonce: bigint }
  /** The stored snapshot did not verify; the session replayed every diff instead. */
  | { readonly type: 'snapshot_rejected'; readonly nonce: bigint; readonly reason: string }
  | { readonly type: 'handler_error'; readonly error: Error };

export type TimeoutOutcomeKind = 'applied' | 'queued' | 'insufficient_votes' | 'no_payload';

/** Calibration of post_state_root against host roots (§12 #1). */
export interface StampCalibration {
  /** First nonce whose diff carried a height-stamped tx (its root depends on unpinned field numbers). */
  firstStampNonce: bigint | undefined;
  /** A host state_hash matched our root at or after that nonce. */
  calibrated: boolean;
}

/**
 * What the session was opened with, fixed for its life: the escrow's record, the injected store,
 * transport, clock and signer, the fencing token and write guard of its ownership (architecture
 * §2.1), the warm-key lookup and recovery apply uses, settings and the event sink. Written only by
 * user-session.ts when it opens the session.
 */
export interface SessionEnvironment {
  readonly record: SessionRecord;
  readonly escrowId: string;
  readonly signer: PrivateKey;
  readonly store: SessionStore;
  readonly transport: HostTransport;
  readonly clock: Clock;
  /** Minted by the store when this session was opened (`acquire`, architecture §2.1). */
  readonly fencingToken: bigint;
  /** Throws when this process may no longer write (lease about to expire); run before every fenced write. */
  readonly writeGuard: (() => void) | undefined;
  /** isWarmKey (persisted bindings, then the chain lookup) and a memoized recover. */
  readonly applyCtx: ApplyContext;
  readonly resolveHost: (address: string) => HostTarget | undefined;
  readonly settings: SessionSettings;
  readonly emit: (event: SessionEvent) => void;
}

/**
 * The protocol data (§5, §7): the current state, the diffs hosts may still need, the txs waiting for
 * the next diff, how far each host is, and the §12 #1 stamp calibration. `state` and `log` change only
 * in write-ahead.ts (compose, then the stored diff becomes current) and append.ts (a write-ahead
 * resolved later); `pending` takes host txs (response.ts) and our timeouts (timeouts.ts) and loses what
 * a diff consumed (write-ahead.ts, append.ts); `hostSync` and `stamps.calibrated` move with host
 * answers (response.ts), `stamps.firstStampNonce` with composition (write-ahead.ts).
 */
export interface SessionData {
  state: SessionState;
  readonly log: DiffLog;
  readonly pending: PendingQueue;
  /** host_sync_nonce per physical host (cold address): every slot of it has the same log. */
  readonly hostSync: Map<string, bigint>;
  readonly stamps: StampCalibration;
}

export function hostSyncOf(ctx: SessionData, address: string): bigint {
  return ctx.hostSync.get(address) ?? 0n;
}

/** The cold address executing nonce `n`: slot n mod N (§1). */
export function targetAddress(ctx: SessionData, nonce: bigint): string {
  const slots = ctx.state.group.slots;
  return slots[Number(nonce % BigInt(slots.length))]!;
}

/**
 * Work in progress and what orders it: one composer at a time, one catch-up per host, bounded
 * verify calls, the writes waiting for a statement (session-writes.ts), background writes and
 * public operations that drain() awaits. Changed through the functions below and in locks.ts.
 */
export interface SessionWork {
  readonly composeLock: SerialLock;
  readonly catchUpLock: KeyedLock;
  readonly verifyLimit: KeyedSemaphore;
  /**
   * Pending-tx, host-progress and signature writes waiting for a statement to carry them, and the
   * chain of the writes carrying them (session-writes.ts).
   */
  readonly writes: WriteBuffer;
  /** Store writes not on the request path (snapshots), awaited by drain(). */
  readonly background: Set<Promise<void>>;
  /** Every public operation in progress (infer, flush, timeouts, mempool recovery, finalize). */
  readonly work: Set<Promise<unknown>>;
}

/** Runs a store write off the request path; failures become events (fenced-out faults: ownership.ts). */
export function inBackground(
  ctx: SessionWork & Pick<SessionEnvironment, 'emit'>,
  operation: string,
  write: () => Promise<void>,
): void {
  const p: Promise<void> = write()
    .catch((error: unknown) => {
      ctx.emit({ type: 'store_error', operation, error: error as Error });
    })
    .finally(() => ctx.background.delete(p));
  ctx.background.add(p);
}

/** Runs `fn` as tracked work: drain() waits for it. */
export function tracked<T>(ctx: SessionWork, fn: () => Promise<T>): Promise<T> {
  const p = fn();
  const settled = p.then(
    () => undefined,
    () => undefined,
  );
  ctx.work.add(settled);
  void settled.then(() => ctx.work.delete(settled));
  return p;
}

/**
 * Settlement progress (§8): state signatures at the final nonce, stored as answers arrive
 * (response.ts) and asked for by signature-collection.ts, and the finalize document once stored
 * (finalize.ts).
 */
export interface SessionSettlement {
  /**
   * Verified state signatures at the final nonce, by host address, gathered while in Settlement
   * (finalize rounds, catch-up receipts, GET signatures; §8.2).
   */
  readonly settlementSigs: Map<string, Uint8Array>;
  /** The stored finalize document JSON, once written (§8.3). */
  finalizeDocument: string | undefined;
  /** A finalize in progress, shared by concurrent callers. */
  finalizeRun: Promise<unknown> | undefined;
}

/**
 * Whether the session may go on and what it is doing: a fault that stops it and the check of a
 * suspicious answer (ownership.ts), an unresolved write-ahead (append.ts), drain and in-flight
 * inferences (user-session.ts), finalize (finalize-gate.ts, finalize.ts), timeout rounds (timeouts.ts).
 */
export interface SessionLifecycle {
  /** Set once the session must not compose again (divergence, ownership lost, close…). */
  fault: SessionError | undefined;
  /**
   * A suspicious answer (a root we do not have, a nonce taken) is being checked against the store:
   * divergence, or ownership lost? Nothing is composed until it settles (ownership.ts).
   */
  faultCheck: Promise<void> | undefined;
  /** A write-ahead whose outcome is unknown; resolved before any other diff is composed. */
  unresolved: Unresolved | undefined;
  /** drain() was called: no new inference or diff. */
  draining: boolean;
  inFlight: number;
  finalizing: boolean;
  checkingTimeouts: boolean;
  /** Inference id → unix second before which no new vote round starts. */
  readonly timeoutRetryAt: Map<bigint, bigint>;
}

/** One session's context: its five parts, above, in one object that user-session.ts builds. */
export type SessionContext = SessionEnvironment &
  SessionData &
  SessionWork &
  SessionSettlement &
  SessionLifecycle;
