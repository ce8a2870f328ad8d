// The diffs composed and signed but not yet durable (architecture §2.3, devshard-protocol.md §7.1):
// composing nonce N + 1 does not wait for nonce N's write-ahead round trip. The next diff is composed
// on the tip — the state after the newest composed diff, durable or not — and waits here; the diffs
// that queue while a write-ahead is in flight go to the store together in the next one
// (SessionStore.appendDiffs), so one escrow is no longer limited to one diff per round trip. The
// write-ahead rule is unchanged: a diff's promise settles, and so anything of it may be sent, only
// once the store holds it and every diff before it, and the replica adopts them in nonce order
// then (replica.ts). A write that fails voids every diff composed after it before any of them was
// written or sent (write-ahead.ts). A leaf: data only, driven by write-ahead.ts.
import type { SessionState } from '../state/types.js';
import type { PendingEntry, PendingQueue } from './pending-queue.js';
import type { Committed, Replica } from './replica.js';
import type { StoredDiff } from './store.js';

/** One signed diff on its way to the store. */
export interface ComposedDiff {
  readonly stored: StoredDiff;
  /** The state it was composed on: the replica must be exactly there when it is adopted. */
  readonly base: SessionState;
  /** The state after it. */
  readonly state: SessionState;
  /** The pending entries it consumes: not offered again while it is in flight. */
  readonly consumed: readonly PendingEntry[];
  /** Inferences it moves out of Pending (their payloads are pruned with it). */
  readonly leftPending: readonly bigint[];
  /** It carries a height-stamped tx (§12 #1). */
  readonly stamped: boolean;
  /** Adopts it in memory once the store holds it (write-ahead.ts). */
  readonly commit: () => Committed;
  /** Settles its request: durable and adopted, or failed (nothing of it was sent). */
  readonly resolve: (committed: Committed) => void;
  readonly reject: (error: unknown) => void;
}

export class WritePipeline {
  /** Composed, waiting for the write in flight to return. */
  #queued: ComposedDiff[] = [];
  /** In the write-ahead in flight, in nonce order. */
  #writing: ComposedDiff[] = [];
  #consumed = new Set<PendingEntry>();
  #idle: (() => void)[] = [];
  /** A loop is writing the queue (write-ahead.ts). */
  pumping = false;

  /** The newest composed diff, durable or not; undefined when every diff is adopted. */
  get newest(): ComposedDiff | undefined {
    return this.#queued.at(-1) ?? this.#writing.at(-1);
  }

  /** State to compose the next diff on: the newest composed one's, else the replica's. */
  tip(durable: SessionState): SessionState {
    return this.newest?.state ?? durable;
  }

  /** Diffs composed and not yet adopted. */
  get size(): number {
    return this.#queued.length + this.#writing.length;
  }

  get hasQueued(): boolean {
    return this.#queued.length > 0;
  }

  /** A diff in flight carries a height stamp (§12 #1 calibration counts it as if adopted). */
  get stampedInFlight(): boolean {
    return this.#writing.some((d) => d.stamped) || this.#queued.some((d) => d.stamped);
  }

  /** Consumed by a diff in flight: the next diff must not take it again. */
  consumed(entry: PendingEntry): boolean {
    return this.#consumed.has(entry);
  }

  push(diff: ComposedDiff): void {
    this.#queued.push(diff);
    for (const e of diff.consumed) this.#consumed.add(e);
  }

  /** The next write: up to `max` queued diffs, oldest first. */
  take(max: number): readonly ComposedDiff[] {
    this.#writing = this.#queued.splice(0, Math.max(1, max));
    return this.#writing;
  }

  /** The write in flight landed: its diffs leave the pipeline (the caller adopts them in order). */
  landed(): readonly ComposedDiff[] {
    const done = this.#writing;
    this.#writing = [];
    for (const d of done) for (const e of d.consumed) this.#consumed.delete(e);
    return done;
  }

  /** The write in flight failed: it and everything composed after it leave, unadopted. */
  voidAll(): { readonly writing: readonly ComposedDiff[]; readonly queued: readonly ComposedDiff[] } {
    const out = { writing: this.#writing, queued: this.#queued };
    this.#writing = [];
    this.#queued = [];
    this.#consumed.clear();
    return out;
  }

  /** Settles once nothing is in flight. */
  idle(): Promise<void> {
    if (this.size === 0 && !this.pumping) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** write-ahead.ts: the loop stopped with nothing in flight. */
  notifyIdle(): void {
    if (this.size > 0 || this.pumping) return;
    const waiting = this.#idle;
    this.#idle = [];
    for (const w of waiting) w();
  }
}

/** The state the next diff is composed on: the newest composed diff's, durable or not. */
export function composeTip(ctx: {
  readonly replica: Replica;
  readonly pipeline: WritePipeline;
}): SessionState {
  return ctx.pipeline.tip(ctx.replica.state);
}

/** The pending entries the next diff may take: those no diff in flight consumes. */
export function offerable(ctx: {
  readonly pending: PendingQueue;
  readonly pipeline: WritePipeline;
}): readonly PendingEntry[] {
  const all = ctx.pending.snapshot();
  return ctx.pipeline.size === 0 ? all : all.filter((e) => !ctx.pipeline.consumed(e));
}
