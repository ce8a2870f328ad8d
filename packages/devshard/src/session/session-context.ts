// What one user-side session is made of, for the modules that compose, deliver, time out and
// finalize (each a small file taking this context or the part of it it needs): what it was opened
// with, fixed for its life, and the objects that own its mutable parts, each written only through its
// own methods:
//   guard          ownership.ts            the fault, the check of a suspicious answer, fenced writes
//   replica        replica.ts              state, diff log, stamp calibration, an append of unknown outcome
//   pipeline       pipeline.ts             diffs composed on the tip, not yet durable
//   pending        pending-queue.ts        host txs and our timeouts waiting for the next diff
//   hosts          host-progress.ts        host_sync_nonce per host, persisted through `writes`
//   writes         write-buffer.ts         small writes waiting for a statement (session-writes.ts)
//   snapshots      snapshot-progress.ts    the snapshot taken, saved and due (saved by snapshots.ts)
//   settlement     settlement-progress.ts  signatures at the final nonce, the finalize document
//   timeoutRounds  timeout-rounds.ts       the §7.4 pass in progress and when to vote again
// plus the locks and trackers of work in progress and the lifecycle flags. Only user-session.ts
// builds one; nothing here but the events is exported. A leaf among the session's modules: it
// imports only modules that import none of the session's, so no two of them import each other.
import type { PrivateKey } from '@gonka-gateway/chain';
import type { TxKind } from '../proto/devshard-tx.js';
import type { ApplyContext } from '../state/apply-context.js';
import type { HostTarget, HostTransport } from '../transport/types.js';
import type { SessionError } from './errors.js';
import type { HostProgress } from './host-progress.js';
import type { RejectReason } from './host-tx-check.js';
import type { KeyedLock, KeyedSemaphore, SerialLock } from './locks.js';
import type { SessionGuard } from './ownership.js';
import type { PendingQueue } from './pending-queue.js';
import type { WritePipeline } from './pipeline.js';
import type { Replica } from './replica.js';
import type { Clock } from './session-clock.js';
import type { SettlementProgress } from './settlement-progress.js';
import type { SnapshotProgress } from './snapshot-progress.js';
import type { SessionRecord, SessionStore } from './store.js';
import type { TimeoutRounds } from './timeout-rounds.js';
import type { WriteBuffer } from './write-buffer.js';

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

/**
 * What the session was opened with, fixed for its life: the escrow's record, the injected store,
 * transport, clock and signer, the warm-key lookup and recovery apply uses, settings and the event
 * sink. Written only by user-session.ts when it opens the session. The fencing token and write guard
 * (architecture §2.1) are the guard's (ownership.ts).
 */
export interface SessionEnvironment {
  readonly record: SessionRecord;
  readonly escrowId: string;
  readonly signer: PrivateKey;
  readonly store: SessionStore;
  readonly transport: HostTransport;
  readonly clock: Clock;
  /** isWarmKey (persisted bindings, then the chain lookup) and a memoized recover. */
  readonly applyCtx: ApplyContext;
  readonly resolveHost: (address: string) => HostTarget | undefined;
  readonly settings: SessionSettings;
  readonly emit: (event: SessionEvent) => void;
}

/**
 * The protocol data (§5, §7): the replica (state, diff log and the §12 #1 stamp calibration, changed
 * only by adopting a stored diff: replica.ts), the txs waiting for the next diff and how far each host
 * is. `pending` takes host txs (response.ts) and our timeouts (timeouts.ts) and loses what a diff
 * consumed (write-ahead.ts, append.ts); `hosts` moves with host answers (response.ts, timeouts.ts).
 */
export interface SessionData {
  readonly replica: Replica;
  readonly pending: PendingQueue;
  /** host_sync_nonce per physical host (cold address), and its persistence (host-progress.ts). */
  readonly hosts: HostProgress;
}

/** The cold address executing nonce `n`: slot n mod N (§1). */
export function targetAddress(ctx: SessionData, nonce: bigint): string {
  const slots = ctx.replica.state.group.slots;
  return slots[Number(nonce % BigInt(slots.length))]!;
}

/**
 * Work in progress and what orders it: one composer at a time, one catch-up per host, bounded
 * verify calls, the writes waiting for a statement (session-writes.ts), background writes and
 * public operations that drain() awaits. Changed through the functions below and in locks.ts.
 */
export interface SessionWork {
  readonly composeLock: SerialLock;
  /**
   * Diffs composed and signed but not yet durable, and the write-aheads carrying them (pipeline.ts,
   * write-ahead.ts): the compose lock is held while a diff is composed, not across its round trip.
   */
  readonly pipeline: WritePipeline;
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

/** Where the snapshots stand (snapshot-progress.ts; snapshots.ts saves them, architecture §2 item 5). */
export interface SessionSnapshots {
  readonly snapshots: SnapshotProgress;
}

/** Settlement progress (§8): signatures at the final nonce, the finalize document (settlement-progress.ts). */
export interface SessionSettlement {
  readonly settlement: SettlementProgress;
}

/**
 * What the session is doing: drain and in-flight inferences (user-session.ts), finalize
 * (finalize-gate.ts, finalize.ts), timeout rounds (timeouts.ts).
 */
export interface SessionLifecycle {
  /** drain() was called: no new inference or diff. */
  draining: boolean;
  inFlight: number;
  finalizing: boolean;
  /** The §7.4 timeout passes and when each inference may be voted on again (timeout-rounds.ts). */
  readonly timeoutRounds: TimeoutRounds;
}

/** Whether the session may still write and compose: its fault and fencing (ownership.ts owns them). */
export interface SessionOwnership {
  readonly guard: SessionGuard;
}

/** One session's context: its parts, above, in one object that user-session.ts builds. */
export type SessionContext = SessionEnvironment &
  SessionOwnership &
  SessionData &
  SessionWork &
  SessionSnapshots &
  SessionSettlement &
  SessionLifecycle;
