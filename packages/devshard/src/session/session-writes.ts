// The session's small writes besides its diffs, grouped so that each rides in one statement
// (docs/performance.md, "Findings": one Postgres round trip before a chat request calls its host,
// the write-ahead, and at most one after the host's response). They wait in `ctx.writes` until one of:
//
// - the next diff's write-ahead (write-ahead.ts), which carries all of them in its own statement;
// - the end of a chat request (inference.ts) or the finalize gate, when the pending-tx queue changed:
//   one saveWrites, so a request's Confirm/Finish are durable before it is answered, as before;
// - drain() (hand-off: nothing may stay behind), and the idle flush of an owned escrow
//   (GATEWAY_FLUSH_IDLE_MS) when no diff comes.
//
// What may wait, and why (devshard-protocol.md §7.1 "keep … host_sync_nonce, pending-tx queue,
// signatures per nonce"; architecture §2.3 and §2.5 item 5):
// - host progress (§7.1 host_sync_nonce): lost on a crash, the next owner sends catch-up diffs the
//   host already holds and learns its nonce from the answer (§7.3 "skipping ahead"): bytes, not money.
// - state signatures of serving (§7.2 step 2): only the final nonce's count (§8.2), and signature
//   collection asks the hosts for them (GET signatures?nonce=final); Settlement-phase signatures
//   are written at once (response.ts) because a resumed finalize loads them.
// - pending-tx deletions: a key dropped for good comes back at reopen, where replay drops it again
//   (user-session.ts open); a consumed key is deleted by its diff's own statement.
// - pending-tx additions between a host's answer and the end of its request: a crash then loses
//   Confirm/Finish the executor still holds in its mempool, which a new owner reads (§2.5 item 5);
//   that was already so while the separate writes were in flight.
// - payload pruning is never deferred: the diff that moves an inference out of Pending prunes it in
//   its own statement (§7.4 needs a payload only while Pending).
//
// Order: a saveWrites starts after the previous one has settled, and a write-ahead after every
// saveWrites started before it, so a key's add always lands before the diff that deletes it
// (WriteBuffer.afterSaves says why the converse needs no wait). A write that fails puts back what it carried (anything newer for the same key wins), so it
// rides in the next write; a fenced-out owner has faulted by then (ownership.ts).

import type { DevshardSlotSignature } from '@gonka-gateway/chain';
import { fencedWrite } from './ownership.js';
import type { PendingEntry } from './pending-queue.js';
import type { SessionContext } from './session-context.js';
import type { SessionWrites, StoredPendingTx } from './store.js';

/** SessionWrites as the buffer builds them: every field present. */
type CarriedWrites = { readonly [K in keyof SessionWrites]-?: NonNullable<SessionWrites[K]> };

const noop = () => undefined;

/** Writes waiting for a statement to carry them, and the chain of writes carrying them. */
export class WriteBuffer {
  /** Dedup key → tx bytes to add, or null to delete; the latest change of a key wins. */
  #pending = new Map<string, Uint8Array | null>();
  #hosts = new Map<string, bigint>();
  #signatures = new Map<bigint, Map<number, Uint8Array>>();
  /** Settles when the latest saveWrites has (never rejects). */
  #saved: Promise<void> = Promise.resolve();
  /** Writes in flight: saveWrites and carrying write-aheads. */
  readonly #inFlight = new Set<Promise<void>>();

  get empty(): boolean {
    return this.#pending.size === 0 && this.#hosts.size === 0 && this.#signatures.size === 0;
  }

  /** The pending-tx queue changed since the last write: what a request must make durable. */
  get queueChanged(): boolean {
    return this.#pending.size > 0;
  }

  /** A write carrying this buffer is still in flight. */
  get writing(): boolean {
    return this.#inFlight.size > 0;
  }

  add(entries: readonly PendingEntry[]): void {
    for (const e of entries) this.#pending.set(e.key, e.tx.bytes);
  }

  delete(keys: readonly string[]): void {
    for (const key of keys) this.#pending.set(key, null);
  }

  hostProgress(address: string, nonce: bigint): void {
    if (nonce > (this.#hosts.get(address) ?? -1n)) this.#hosts.set(address, nonce);
  }

  signatures(nonce: bigint, entries: readonly DevshardSlotSignature[]): void {
    const atNonce = this.#signatures.get(nonce) ?? new Map<number, Uint8Array>();
    this.#signatures.set(nonce, atNonce);
    for (const s of entries) if (!atNonce.has(s.slotId)) atNonce.set(s.slotId, s.signature);
  }

  /** Empties the buffer into one SessionWrites (every field present: one object shape for V8). */
  take(): CarriedWrites {
    const addPending: StoredPendingTx[] = [];
    const deletePending: string[] = [];
    for (const [key, bytes] of this.#pending) {
      if (bytes) addPending.push({ key, bytes });
      else deletePending.push(key);
    }
    const writes: CarriedWrites = {
      addPending,
      deletePending,
      prunePayloads: [],
      hostProgress: [...this.#hosts].map(([address, nonce]) => ({ address, nonce })),
      signatures: [...this.#signatures].map(([nonce, bySlot]) => ({
        nonce,
        signatures: [...bySlot].map(([slotId, signature]) => ({ slotId, signature })),
      })),
    };
    // Cleared, not replaced: `writes` holds copies, and most takes find one or two maps empty.
    this.#pending.clear();
    this.#hosts.clear();
    this.#signatures.clear();
    return writes;
  }

  /**
   * Puts back what a failed write carried; whatever changed since for the same key or host wins.
   * Payload pruning is not put back: it belongs to the diff that failed with it (write-ahead.ts).
   */
  restore(writes: CarriedWrites): void {
    const newer = this.#pending;
    this.#pending = new Map();
    for (const t of writes.addPending) this.#pending.set(t.key, t.bytes);
    for (const key of writes.deletePending) this.#pending.set(key, null);
    for (const [key, bytes] of newer) this.#pending.set(key, bytes);
    for (const h of writes.hostProgress) this.hostProgress(h.address, h.nonce);
    for (const s of writes.signatures) this.signatures(s.nonce, s.signatures);
  }

  /** A saveWrites: after every earlier one, so what a failed one put back rides in the next. */
  save(write: () => Promise<void>): Promise<void> {
    const run = this.#saved.then(write);
    this.#saved = run.then(noop, noop);
    return this.#track(run);
  }

  /**
   * A write-ahead carrying the buffer (write-ahead.ts, append.ts): after every saveWrites started so
   * far, so a consumed key's add has landed before the diff deletes it. Later saveWrites need not
   * wait for it: none can carry a key it consumes, since the key stays queued in memory until the
   * diff commits (intake skips queued keys) and is refused as applied afterwards (host-tx-check.ts).
   */
  afterSaves<T>(write: () => Promise<T>): Promise<T> {
    return this.#track(this.#saved.then(write));
  }

  /** Settles once every saveWrites started so far has (never rejects). */
  saved(): Promise<void> {
    return this.#saved;
  }

  /** Settles once every write in flight now has (drain). */
  async settled(): Promise<void> {
    await Promise.all(this.#inFlight);
  }

  #track<T>(run: Promise<T>): Promise<T> {
    const done = run.then(noop, noop);
    this.#inFlight.add(done);
    void done.then(() => this.#inFlight.delete(done));
    return run;
  }
}

/**
 * What a diff's write-ahead carries (write-ahead.ts): the waiting writes, with the keys the diff
 * consumes deleted rather than added (the diff holds those txs itself, §7.1 step 4), and the
 * payloads it prunes.
 */
export function diffWrites(
  waiting: CarriedWrites,
  consumed: readonly string[],
  prunePayloads: readonly bigint[],
): CarriedWrites {
  const gone = new Set(consumed);
  return {
    addPending: gone.size > 0 ? waiting.addPending.filter((t) => !gone.has(t.key)) : waiting.addPending,
    deletePending:
      gone.size > 0 ? [...new Set([...waiting.deletePending, ...consumed])] : waiting.deletePending,
    prunePayloads,
    hostProgress: waiting.hostProgress,
    signatures: waiting.signatures,
  };
}

const hasWrites = (w: CarriedWrites) =>
  w.addPending.length + w.deletePending.length + w.hostProgress.length + w.signatures.length > 0;

/** Queued entries to store (a key already stored stays as it is). */
export function persistAdded(ctx: SessionContext, entries: readonly PendingEntry[]): void {
  ctx.writes.add(entries);
}

/** Entries dropped for good (they can never apply), not consumed by a diff. */
export function persistRemoved(ctx: SessionContext, keys: readonly string[]): void {
  ctx.writes.delete(keys);
}

/**
 * Writes what waits in the buffer in one statement (nothing when it is empty) after the writes
 * already started; resolves once all of them have settled. A failure is reported as a
 * `store_error` event and puts the writes back for the next statement (architecture §2.3: losing
 * them loses nothing that cannot be re-learned, see the header); a fenced-out owner faults.
 */
export function saveWrites(ctx: SessionContext): Promise<void> {
  if (!ctx.writes.empty) {
    void ctx.writes.save(async () => {
      // Taken once the earlier writes settled, so what a failed one put back rides here.
      const writes = ctx.writes.take();
      if (!hasWrites(writes)) return;
      try {
        await fencedWrite(ctx, 'saveWrites', (token) => ctx.store.saveWrites(ctx.escrowId, writes, token));
      } catch (error) {
        ctx.writes.restore(writes);
        ctx.emit({ type: 'store_error', operation: 'saveWrites', error: error as Error });
      }
    });
  }
  return ctx.writes.saved();
}

/**
 * The durability point of a request (inference.ts) and of the finalize gate: the Confirm/Finish it
 * queued (and everything else waiting with them) are stored before it answers. Host progress and
 * signatures alone wait for the next statement (see the header).
 */
export function queueWritten(ctx: SessionContext): Promise<void> {
  return ctx.writes.queueChanged ? saveWrites(ctx) : ctx.writes.saved();
}
