// Whether this session may still write its escrow (architecture §2.1, §2.3), and how it stops when it
// may not. Every fenced store write goes through fencedWrite: the owner's write guard (its lease) runs
// first, and a `stale_token` from the store means a newer owner holds the escrow. Both fault the
// session with `ownership_lost`, never `divergence`: a fenced owner seeing a host ahead of it, or a
// nonce already taken, is what a takeover looks like from the old side, and must not pause a healthy
// escrow. Such answers are therefore checked against the store before they are called a divergence.
//
// SessionGuard owns the session's fault and the check in progress: nothing else writes them, so the
// first cause wins and is reported once wherever it comes from. It imports only errors.ts and
// store.ts, so every module can reach it through the context (session-context.ts) without a circle.

import { SessionError, SessionErrorCode } from './errors.js';
import { isSessionStoreError, type SessionStore, SessionStoreErrorCode } from './store.js';

export const isStaleToken = (error: unknown): boolean =>
  isSessionStoreError(error) && error.code === SessionStoreErrorCode.StaleToken;

export interface SessionGuardOptions {
  readonly escrowId: string;
  readonly store: SessionStore;
  /** Minted by the store when this session was opened (`acquire`, architecture §2.1). */
  readonly fencingToken: bigint;
  /** Throws when this process may no longer write (lease about to expire); run before every fenced write. */
  readonly writeGuard: (() => void) | undefined;
  /** Called once, with the first fault (the session reports it as a `faulted` event). */
  readonly onFault: (error: SessionError) => void;
  /** Background work drain() awaits: an ownership check in progress is added to it. */
  readonly background: Set<Promise<void>>;
}

/** The session's ownership of its escrow and the fault that stops it. */
export class SessionGuard {
  /** Minted by the store when this session was opened (`acquire`, architecture §2.1). */
  readonly fencingToken: bigint;
  readonly #options: SessionGuardOptions;
  #fault: SessionError | undefined;
  #check: Promise<void> | undefined;

  constructor(options: SessionGuardOptions) {
    this.#options = options;
    this.fencingToken = options.fencingToken;
  }

  /** Set once the session must not compose again (divergence, ownership lost, close…). */
  get fault(): SessionError | undefined {
    return this.#fault;
  }

  /**
   * A suspicious answer (a root we do not have, a nonce taken, a rejected diff) is being checked:
   * divergence, or ownership lost? Nothing is composed until it settles.
   */
  get checking(): Promise<void> | undefined {
    return this.#check;
  }

  /** Neither faulted nor checking: composition may go on. */
  get usable(): boolean {
    return !this.#fault && !this.#check;
  }

  /** Stops the session for good (first cause wins) and reports it once with a `faulted` event. */
  faultWith(error: SessionError): SessionError {
    if (this.#fault) return this.#fault;
    this.#fault = error;
    this.#options.onFault(error);
    return error;
  }

  ownershipLost(detail: string, cause?: unknown): SessionError {
    return this.faultWith(new SessionError(SessionErrorCode.OwnershipLost, detail, cause));
  }

  /** close(): the session stops without a fault to report (`closed`), unless it already had one. */
  close(): void {
    this.#fault ??= new SessionError(SessionErrorCode.Closed);
  }

  /**
   * A write that needs the current fencing token. The write guard runs right before it; a guard that
   * throws, or a store that answers `stale_token`, faults the session with `ownership_lost` (thrown as
   * a SessionError). Other store errors pass through unchanged.
   */
  async fencedWrite<T>(operation: string, write: (token: bigint) => Promise<T>): Promise<T> {
    try {
      this.#options.writeGuard?.();
    } catch (error) {
      throw this.ownershipLost(`${operation}: write guard refused (${(error as Error).message})`, error);
    }
    try {
      return await write(this.fencingToken);
    } catch (error) {
      if (isStaleToken(error)) throw this.ownershipLost(`${operation}: ${(error as Error).message}`, error);
      throw error;
    }
  }

  /**
   * Whether this session still holds the escrow: the guard passes and the store's current token is
   * ours. A store that cannot be read leaves the question open (undefined).
   */
  async stillOwner(): Promise<boolean | undefined> {
    try {
      this.#options.writeGuard?.();
    } catch {
      return false;
    }
    try {
      const stored = await this.#options.store.load(this.#options.escrowId);
      return stored !== undefined && stored.fencingToken === this.fencingToken;
    } catch {
      return undefined;
    }
  }

  /**
   * A suspicious answer (e.g. a host root we cannot match): composition stops at once, the store says
   * whether we are still the owner, and the session faults with `ownership_lost` or with `suspected`
   * (then `confirmed` runs, e.g. to report the divergence). An unreadable store keeps `suspected`: the
   * evidence we have.
   */
  faultAfterCheck(suspected: SessionError, confirmed?: () => void): void {
    if (!this.usable) return;
    const check = (async () => {
      const owner = await this.stillOwner();
      if (owner === false) {
        this.ownershipLost(`not the writer any more (${suspected.message})`);
        return;
      }
      if (!this.#fault) confirmed?.();
      this.faultWith(suspected);
    })().finally(() => {
      this.#check = undefined;
    });
    this.#check = check;
    const { background } = this.#options;
    background.add(check);
    void check.finally(() => background.delete(check));
  }

  /**
   * Runs `inspect` with composition stopped, as a check in progress (the §10 item 2 breaker,
   * delivery.ts). Returns undefined without running it when the session is faulted or already
   * checking.
   */
  async pausedFor<T>(inspect: () => Promise<T>): Promise<T | undefined> {
    if (!this.usable) return undefined;
    let release!: () => void;
    this.#check = new Promise<void>((resolve) => {
      release = resolve;
    });
    try {
      return await inspect();
    } finally {
      this.#check = undefined;
      release();
    }
  }

  /** Settles once no ownership check is in progress. */
  async checked(): Promise<void> {
    while (this.#check) await this.#check;
  }

  /** Throws the session's fault, after any ownership check in progress has settled. */
  async assertUsable(): Promise<void> {
    await this.checked();
    if (this.#fault) throw this.#fault;
  }
}
