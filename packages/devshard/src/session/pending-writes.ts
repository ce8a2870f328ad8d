// Persisting the pending-tx queue row by row (devshard-protocol.md §7.1 "pending-tx queue", architecture
// §2.3): a host tx is added to the store when it is queued, deleted in the same transaction as the diff
// that consumes it (write-ahead.ts passes the keys to appendDiff), and removed on its own only when it
// can never apply. Writes run off the request path; the latest one per key is remembered so a diff
// consuming the key waits for it, and a request waits for its own Confirm/Finish to be durable.

import { fencedWrite } from './ownership.js';
import { type PendingEntry, toStoredPending } from './pending-queue.js';
import type { SessionContext } from './session-context.js';

function remember(ctx: SessionContext, keys: readonly string[], write: Promise<void>): void {
  for (const key of keys) {
    ctx.pendingWrites.set(key, write);
    void write.finally(() => {
      if (ctx.pendingWrites.get(key) === write) ctx.pendingWrites.delete(key);
    });
  }
}

function run(
  ctx: SessionContext,
  operation: string,
  keys: readonly string[],
  fn: (token: bigint) => Promise<void>,
) {
  if (keys.length === 0) return;
  const write = fencedWrite(ctx, operation, fn).catch((error: unknown) => {
    // Not fatal: an unsaved tx still rides in the next diff, and a new owner reads the mempools.
    ctx.emit({ type: 'store_error', operation, error: error as Error });
  });
  remember(ctx, keys, write);
}

/** Stores newly queued entries (a key already stored stays as it is). */
export function persistAdded(ctx: SessionContext, entries: readonly PendingEntry[]): void {
  run(
    ctx,
    'addPendingTxs',
    entries.map((e) => e.key),
    (token) => ctx.store.addPendingTxs(ctx.escrowId, toStoredPending(entries), token),
  );
}

/** Deletes entries dropped for good (they can never apply), not consumed by a diff. */
export function persistRemoved(ctx: SessionContext, keys: readonly string[]): void {
  run(ctx, 'removePendingTxs', keys, (token) => ctx.store.removePendingTxs(ctx.escrowId, keys, token));
}

/** Resolves once the latest write of each key (all keys when omitted) has settled. */
export async function pendingWritten(ctx: SessionContext, keys?: readonly string[]): Promise<void> {
  const writes = keys ? keys.map((k) => ctx.pendingWrites.get(k)) : [...ctx.pendingWrites.values()];
  await Promise.all(writes);
}
