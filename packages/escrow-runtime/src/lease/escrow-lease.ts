// The Redis lease that says which replica writes an escrow's session (architecture §2.1). The lease
// only says who SHOULD write; whether a write counts is decided by the Postgres fencing token
// (SessionStore.acquire), so a lease is never trusted beyond its local validity deadline:
//
//   validUntil = (monotonic time taken BEFORE the successful SET/renew was sent) + TTL − safety margin
//
// Redis started the TTL after we read the clock, so our deadline always falls before the key can
// expire. `guard()` throws once the deadline has passed or the lease was lost; it is the session's
// writeGuard, called right before every fenced store write, so an owner paused (SIGSTOP, GC, swap)
// past its TTL appends nothing once it runs again. Losing is final: a new lease must be acquired.
import { performance } from 'node:perf_hooks';
import type { RedisKeys } from '@gonka-gateway/shared';
import type { Redis } from 'ioredis';
import { leaseScripts } from './lease-scripts.js';

export type LeaseLossReason =
  /** Renewal or token swap found another value (or none): someone else owns it, or Redis lost it. */
  | 'taken'
  /** The local validity deadline passed without a successful renewal. */
  | 'expired'
  /** We released it. */
  | 'released';

export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
  readonly reason: LeaseLossReason;

  constructor(escrowId: bigint, reason: LeaseLossReason) {
    super(`lease of escrow ${escrowId} lost (${reason})`);
    this.reason = reason;
  }
}

export interface EscrowLeaseOptions {
  readonly redis: Redis;
  readonly keys: RedisKeys;
  readonly escrowId: bigint;
  /**
   * The Redis key, when the lease is not an escrow's: the controller's leader lease (one active
   * controller) is the same compare-and-set lease with its own key. Default
   * keys.escrowLease(escrowId).
   */
  readonly key?: string;
  /** Unique per process start (never reused after a restart). Must not contain ':'. */
  readonly replicaId: string;
  readonly ttlMs: number;
  /** Taken off the TTL for the local deadline (default TTL/5): Redis latency and timer lateness. */
  readonly safetyMarginMs?: number;
  /** Renewal period (default TTL/3). */
  readonly renewEveryMs?: number;
  /** Monotonic milliseconds (default performance.now, which keeps counting while the process is stopped). */
  readonly now?: () => number;
  /** Called once, when the lease is lost for any reason but `released`. */
  readonly onLost?: (reason: LeaseLossReason) => void;
}

/** `${replicaId}:${token}`; the token is 0 until the Postgres session was acquired. */
export function leaseValue(replicaId: string, token: bigint): string {
  return `${replicaId}:${token}`;
}

/** Splits a lease value into owner and token; undefined for a malformed one. */
export function parseLeaseValue(value: string): { replicaId: string; token: bigint } | undefined {
  const at = value.lastIndexOf(':');
  if (at <= 0 || !/^\d+$/.test(value.slice(at + 1))) return undefined;
  return { replicaId: value.slice(0, at), token: BigInt(value.slice(at + 1)) };
}

export class EscrowLease {
  readonly escrowId: bigint;
  readonly key: string;
  readonly #o: EscrowLeaseOptions;
  readonly #now: () => number;
  readonly #margin: number;
  #value: string;
  #validUntil: number;
  #lost: LeaseLossReason | undefined;
  #renewTimer: NodeJS.Timeout | undefined;
  #expiryTimer: NodeJS.Timeout | undefined;

  private constructor(options: EscrowLeaseOptions, value: string, sentAt: number) {
    this.#o = options;
    this.escrowId = options.escrowId;
    this.key = options.key ?? options.keys.escrowLease(options.escrowId);
    this.#now = options.now ?? (() => performance.now());
    this.#margin = options.safetyMarginMs ?? Math.round(options.ttlMs / 5);
    this.#value = value;
    this.#validUntil = sentAt + options.ttlMs - this.#margin;
    this.#scheduleExpiry();
    this.#scheduleRenew();
  }

  /** SET NX PX: the lease when the escrow was unowned, undefined when someone holds it. */
  static async acquire(options: EscrowLeaseOptions): Promise<EscrowLease | undefined> {
    if (options.replicaId.includes(':')) throw new RangeError('replicaId must not contain ":"');
    const margin = options.safetyMarginMs ?? Math.round(options.ttlMs / 5);
    if (!(options.ttlMs > margin && margin >= 0))
      throw new RangeError('lease TTL must exceed its safety margin');
    const now = options.now ?? (() => performance.now());
    const value = leaseValue(options.replicaId, 0n);
    const sentAt = now();
    const ok = await leaseScripts.acquire(
      options.redis,
      options.key ?? options.keys.escrowLease(options.escrowId),
      value,
      options.ttlMs,
    );
    return ok ? new EscrowLease(options, value, sentAt) : undefined;
  }

  get value(): string {
    return this.#value;
  }

  get replicaId(): string {
    return this.#o.replicaId;
  }

  /** Why the lease is gone, or undefined while it is held. */
  get lost(): LeaseLossReason | undefined {
    this.#checkDeadline();
    return this.#lost;
  }

  /** Milliseconds left on the local deadline (≤ 0 once it passed). */
  get remainingMs(): number {
    return this.#validUntil - this.#now();
  }

  /** The session's writeGuard: throws LeaseLostError unless the lease is held and within its deadline. */
  guard = (): void => {
    this.#checkDeadline();
    if (this.#lost) throw new LeaseLostError(this.escrowId, this.#lost);
  };

  /** Records the Postgres fencing token in the lease value (compare-and-set; keeps the TTL). */
  async setToken(token: bigint): Promise<void> {
    this.guard();
    const next = leaseValue(this.#o.replicaId, token);
    const ok = await leaseScripts.swap(this.#o.redis, this.key, this.#value, next);
    if (!ok) {
      this.#lose('taken');
      throw new LeaseLostError(this.escrowId, 'taken');
    }
    if (!this.#lost) this.#value = next;
  }

  /** Stops renewing and deletes the key if it still holds our value (compare-and-delete). */
  async release(): Promise<void> {
    const wasHeld = !this.#lost;
    this.#stopTimers();
    if (!this.#lost) this.#lost = 'released';
    // Even an expired lease may still sit in Redis with our value (a renewal that landed late):
    // deleting it lets the next owner in without waiting for the TTL.
    if (wasHeld || this.#lost === 'expired') {
      await leaseScripts.release(this.#o.redis, this.key, this.#value).catch(() => false);
    }
  }

  #checkDeadline(): void {
    if (!this.#lost && this.#now() >= this.#validUntil) this.#lose('expired');
  }

  #lose(reason: LeaseLossReason): void {
    if (this.#lost) return;
    this.#lost = reason;
    this.#stopTimers();
    if (reason === 'expired') {
      void leaseScripts.release(this.#o.redis, this.key, this.#value).catch(() => false);
    }
    try {
      this.#o.onLost?.(reason);
    } catch {
      // A failing listener must not keep a lost lease looking alive.
    }
  }

  #stopTimers(): void {
    clearTimeout(this.#renewTimer);
    clearTimeout(this.#expiryTimer);
    this.#renewTimer = undefined;
    this.#expiryTimer = undefined;
  }

  #scheduleExpiry(): void {
    clearTimeout(this.#expiryTimer);
    // Fires at the deadline even when a renewal hangs (Redis unreachable): routing stops on time.
    this.#expiryTimer = setTimeout(() => this.#checkDeadline(), Math.max(0, this.remainingMs) + 1);
    this.#expiryTimer.unref();
  }

  #scheduleRenew(): void {
    const every = this.#o.renewEveryMs ?? Math.max(1, Math.floor(this.#o.ttlMs / 3));
    this.#renewTimer = setTimeout(() => void this.#renew(), every);
    this.#renewTimer.unref();
  }

  async #renew(): Promise<void> {
    this.#checkDeadline();
    if (this.#lost) return;
    const value = this.#value;
    const sentAt = this.#now();
    let renewed: boolean | undefined;
    try {
      renewed = await leaseScripts.renew(this.#o.redis, this.key, value, this.#o.ttlMs);
    } catch {
      renewed = undefined; // Redis unreachable: retry; the deadline takes the lease if it lasts.
    }
    if (this.#lost) return;
    if (renewed === false) {
      // Not ours any more only if the value did not change under us (setToken swaps it).
      if (value === this.#value) this.#lose('taken');
      else this.#scheduleRenew();
      return;
    }
    if (renewed === true) {
      this.#validUntil = Math.max(this.#validUntil, sentAt + this.#o.ttlMs - this.#margin);
      this.#scheduleExpiry();
    }
    this.#checkDeadline();
    if (!this.#lost) this.#scheduleRenew();
  }
}
