// The buffer of the session's small writes besides its diffs and the order of the statements that
// carry them (the rules and why each write may wait: session-writes.ts). A leaf: it holds data and
// promise chains only, so the session's state types (session-context.ts) can name it without
// importing the modules that write through it.
import type { DevshardSlotSignature } from '@gonka-gateway/chain';
import type { PendingEntry } from './pending-queue.js';
import type { SessionWrites, StoredPendingTx } from './store.js';

/** SessionWrites as the buffer builds them: every field present. */
export type CarriedWrites = { readonly [K in keyof SessionWrites]-?: NonNullable<SessionWrites[K]> };

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
