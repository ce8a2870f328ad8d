// The queue of transactions waiting for the next diff (devshard-protocol.md §7.1, §7.2 step 5):
// host-proposed txs in arrival order plus our own timeouts, deduplicated by key while pending. The
// composer orders them (orderCandidates); a composed diff removes exactly the entries it was offered,
// so txs queued while the store write was in flight stay for the next diff.

import { sha256 } from '@gonka-gateway/chain';
import type { DevshardTx, EncodedTx } from '../proto/devshard-tx.js';
import { dedupKey } from '../state/candidates.js';
import type { StoredPendingTx } from './store.js';

export interface PendingEntry {
  readonly tx: EncodedTx;
  readonly key: string | undefined;
}

/**
 * The spec's dedup keys (`finish:{id}`, `confirm:{id}`, `validation:{id}:{slot}`, `vote:{id}:{slot}`)
 * plus `timeout:{id}` for our own MsgTimeoutInference, so one inference never gets two.
 */
export function pendingKey(tx: DevshardTx): string | undefined {
  const key = dedupKey(tx);
  if (key !== undefined) return key;
  return tx.kind === 'timeoutInference' ? `timeout:${tx.msg.inferenceId}` : undefined;
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

  /** Adds `tx` unless an entry with its key is pending; returns whether it was added. */
  add(tx: EncodedTx): boolean {
    const key = pendingKey(tx.tx);
    if (key !== undefined) {
      if (this.#keys.has(key)) return false;
      this.#keys.add(key);
    }
    this.#entries.push({ tx, key });
    return true;
  }

  /** Removes these entries (by identity); entries added meanwhile stay. */
  remove(entries: Iterable<PendingEntry>): void {
    const gone = new Set(entries);
    if (gone.size === 0) return;
    this.#entries = this.#entries.filter((e) => !gone.has(e));
    for (const e of gone) if (e.key !== undefined) this.#keys.delete(e.key);
  }

  snapshot(): readonly PendingEntry[] {
    return [...this.#entries];
  }

  toStored(): StoredPendingTx[] {
    return this.#entries.map((e) => ({
      bytes: e.tx.bytes,
      key: e.key ?? `tx:${Buffer.from(sha256(e.tx.bytes)).toString('hex')}`,
    }));
  }
}
