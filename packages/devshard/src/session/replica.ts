// The user's replica of the session (devshard-protocol.md §7.1): the state after the latest stored
// diff, the diffs hosts may still need (diff-log.ts) and the §12 #1 stamp calibration. State and log
// change together and only by adopting a diff the store already holds (architecture §2.3, write-ahead:
// write-ahead.ts after its append, append.ts when it adopts the store's head), so the next nonce is
// always one past a stored diff and no nonce is signed twice; a diff whose append outcome is unknown
// keeps its nonce here until the store settles it. A leaf: it imports no session module
// that writes through it.
import type { DroppedTx } from '../state/compose.js';
import { InferenceStatus, type SessionState } from '../state/types.js';
import type { DiffLog } from './diff-log.js';
import type { SessionWrites, StoredDiff } from './store.js';

/** Calibration of post_state_root against host roots (§12 #1). */
export interface StampCalibration {
  /** First nonce whose diff carried a height-stamped tx (its root depends on unpinned field numbers). */
  firstStampNonce: bigint | undefined;
  /** A host state_hash matched our root at or after that nonce. */
  calibrated: boolean;
}

export interface Committed {
  readonly stored: StoredDiff;
  /** Cold address of slot nonce mod N. */
  readonly target: string;
  readonly dropped: readonly DroppedTx[];
}

/**
 * Signed diffs on their way to the store in one write-ahead (write-ahead.ts): consecutive nonces,
 * all or nothing (pipeline.ts), with what adopting them in memory takes.
 */
export interface Unresolved {
  readonly diffs: readonly StoredDiff[];
  /**
   * What the append's statement carries (built by write-ahead.ts, appended by append.ts): the
   * deletion of the pending txs the diffs consume, pruned payloads, and the session's waiting writes
   * (session-writes.ts).
   */
  readonly writes: SessionWrites;
  /** Adopts the diffs in memory, in nonce order, once the store holds them. */
  readonly commit: () => void;
}

/** The log as everyone but the replica sees it: read, never appended to or pruned. */
export type DiffLogView = Omit<DiffLog, 'append' | 'prunePayloads' | 'restorePayloads'>;

/** The state, its diff log and the stamp calibration, written only through the methods below. */
export class Replica {
  #state: SessionState;
  readonly #log: DiffLog;
  readonly #stamps: StampCalibration;
  #unresolved: Unresolved | undefined;

  /** From replay (replay.ts): the state after the latest stored diff and the log ending there. */
  constructor(state: SessionState, log: DiffLog, stamps: StampCalibration) {
    this.#state = state;
    this.#log = log;
    this.#stamps = stamps;
  }

  /** The replica after the latest persisted diff (an immutable value). */
  get state(): SessionState {
    return this.#state;
  }

  get log(): DiffLogView {
    return this.#log;
  }

  get stamps(): Readonly<StampCalibration> {
    return this.#stamps;
  }

  /**
   * Signed diffs whose append has an unknown outcome: they own the next nonces until the store says
   * whether they landed, and are appended again before anything else is composed (append.ts).
   */
  get unresolved(): Unresolved | undefined {
    return this.#unresolved;
  }

  /** append.ts: the append of `write` ended with an unknown outcome. */
  appendUnknown(write: Unresolved): void {
    this.#unresolved = write;
  }

  /** append.ts: the outcome of the pending append is known (landed, refused or taken). */
  appendKnown(): void {
    this.#unresolved = undefined;
  }

  /**
   * The store holds `stored`, and `state` is the current state with it applied: both become current.
   * Only the next nonce: adoption is in nonce order (pipeline.ts), never past a gap.
   */
  adopt(stored: StoredDiff, state: SessionState): void {
    if (stored.nonce !== this.#state.latestNonce + 1n || state.latestNonce !== stored.nonce) {
      throw new Error(`adopting nonce ${stored.nonce} after ${this.#state.latestNonce}`);
    }
    this.#state = state;
    this.#log.append(stored);
  }

  /**
   * Drops the payloads of inferences no longer Pending: §7.4 needs a payload only to prove a refusal
   * (the store prunes them with the diff that moved them, write-ahead.ts).
   */
  prunePayloads(): void {
    this.#log.prunePayloads((id) => this.#state.inferences.get(id)?.status === InferenceStatus.Pending);
  }

  /** Diff `nonce` carried a height-stamped tx (write-ahead.ts); only the first one counts. */
  stamped(nonce: bigint): void {
    if (this.#stamps.firstStampNonce === undefined) this.#stamps.firstStampNonce = nonce;
  }

  /** A host's state_hash matched our root at `nonce` (response.ts). */
  rootConfirmed(nonce: bigint): void {
    const first = this.#stamps.firstStampNonce;
    if (first !== undefined && nonce >= first) this.#stamps.calibrated = true;
  }
}
