// The queue of transactions waiting for the next diff (devshard-protocol.md §7.1, §7.2 step 5):
// host-proposed txs in arrival order plus our own timeouts, deduplicated by key while pending. The
// composer orders them (orderCandidates); a composed diff removes exactly the entries it was offered,
// so txs queued while the store write was in flight stay for the next diff. Every entry has a key: the
// store keeps one row per key, added and removed one by one (never the whole queue rewritten, so an
// older owner cannot overwrite a newer one's queue).

import { sha256 } from '@gonka-gateway/chain';
import type { DevshardTx, EncodedTx } from '../proto/devshard-tx.js';
import { dedupKey, dedupKeys } from '../state/candidates.js';
import type { StoredPendingTx } from './store.js';

export interface PendingEntry {
  readonly tx: EncodedTx;
  readonly key: string;
}

/** The spec's dedup keys plus the timeout key for our own MsgTimeoutInference (state/candidates.ts). */
export function pendingKey(tx: DevshardTx): string | undefined {
  const key = dedupKey(tx);
  if (key !== undefined) return key;
  return tx.kind === 'timeoutInference' ? dedupKeys.timeout(tx.msg.inferenceId) : undefined;
}

/** The store's row key of a pending tx: its dedup key, else `tx:<sha256 hex of its bytes>`. */
export function storedPendingKey(tx: EncodedTx): string {
  return pendingKey(tx.tx) ?? `tx:${Buffer.from(sha256(tx.bytes)).toString('hex')}`;
}

export class PendingQueue {
  #entries: PendingEntry[] = [];
  readonly #keys = new Set<string>();

  get size(): number {
    return this.#entries.length;
  }

  has(key: string): boolean {
    return this.#keys.has(key);
  }

  /** Adds `tx` unless an entry with its key is pending; returns the new entry, or undefined. */
  add(tx: EncodedTx): PendingEntry | undefined {
    const key = storedPendingKey(tx);
    if (this.#keys.has(key)) return undefined;
    this.#keys.add(key);
    const entry = { tx, key };
    this.#entries.push(entry);
    return entry;
  }

  /** Removes these entries (by identity); entries added meanwhile stay. */
  remove(entries: Iterable<PendingEntry>): void {
    const gone = new Set(entries);
    if (gone.size === 0) return;
    this.#entries = this.#entries.filter((e) => !gone.has(e));
    for (const e of gone) this.#keys.delete(e.key);
  }

  snapshot(): readonly PendingEntry[] {
    return [...this.#entries];
  }

  keys(): string[] {
    return [...this.#keys];
  }
}

export function toStoredPending(entries: Iterable<PendingEntry>): StoredPendingTx[] {
  return [...entries].map((e) => ({ bytes: e.tx.bytes, key: e.key }));
}
