// Where the session's snapshots stand (architecture §2 item 5; snapshots.ts saves them): the newest
// taken and saved, the state due for saving, whether the one background writer runs, and after a
// failed save the nonce before which none is tried again. Only snapshots.ts changes it. A leaf.
import type { SessionState } from '../state/types.js';

/** A state due for saving, with its §12 #1 stamp nonce (the snapshot envelope carries it). */
export interface DueSnapshot {
  readonly state: SessionState;
  readonly firstStampNonce: bigint | undefined;
}

/** The snapshot schedule of one session. */
export class SnapshotProgress {
  /** Nonce of the newest snapshot taken (due, being written or saved). */
  #taken: bigint;
  /** Nonce of the newest snapshot saved (or the one the session was opened from). */
  #saved: bigint;
  /** No new attempt before this nonce (after a failure). */
  #retryAt = 0n;
  /** The newest state due for saving; a newer one replaces it while the writer waits. */
  #due: DueSnapshot | undefined;
  #writing = false;

  /** `base`: the nonce of the snapshot the session was opened from (0 without one). */
  constructor(base: bigint) {
    this.#taken = base;
    this.#saved = base;
  }

  /**
   * Makes `due` the state to save when `every` diffs have passed since the last one taken and no
   * retry wait holds. Returns true when the caller must start the writer (none runs yet).
   */
  offer(due: DueSnapshot, every: bigint): boolean {
    const nonce = due.state.latestNonce;
    if (nonce - this.#taken < every || nonce < this.#retryAt) return false;
    this.#taken = nonce;
    this.#due = due;
    if (this.#writing) return false;
    this.#writing = true;
    return true;
  }

  /** The writer takes the newest due state (undefined: nothing left, it stops). */
  takeDue(): DueSnapshot | undefined {
    const due = this.#due;
    this.#due = undefined;
    return due;
  }

  /** The snapshot at `nonce` is stored. */
  saved(nonce: bigint): void {
    this.#saved = nonce;
  }

  /** A save failed: the next is taken from the last saved one, and not before `retryAt`. */
  failed(retryAt: bigint): void {
    this.#taken = this.#saved;
    this.#retryAt = retryAt;
  }

  /** The writer stopped (nothing due, or a failure). */
  stopped(): void {
    this.#writing = false;
  }
}
