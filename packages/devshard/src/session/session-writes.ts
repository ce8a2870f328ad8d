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

import type { SessionContext } from './session-context.js';
import type { CarriedWrites } from './write-buffer.js';

/** What a statement of waiting writes takes: the buffer, and the fenced store write that carries it. */
type Statements = Pick<SessionContext, 'writes' | 'guard' | 'store' | 'escrowId' | 'emit'>;

const hasWrites = (w: CarriedWrites) =>
  w.addPending.length + w.deletePending.length + w.hostProgress.length + w.signatures.length > 0;

/**
 * Writes what waits in the buffer in one statement (nothing when it is empty) after the writes
 * already started; resolves once all of them have settled. A failure is reported as a
 * `store_error` event and puts the writes back for the next statement (architecture §2.3: losing
 * them loses nothing that cannot be re-learned, see the header); a fenced-out owner faults.
 */
export function saveWrites(ctx: Statements): Promise<void> {
  if (!ctx.writes.empty) {
    void ctx.writes.save(async () => {
      // Taken once the earlier writes settled, so what a failed one put back rides here.
      const writes = ctx.writes.take();
      if (!hasWrites(writes)) return;
      try {
        await ctx.guard.fencedWrite('saveWrites', (token) =>
          ctx.store.saveWrites(ctx.escrowId, writes, token),
        );
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
export function queueWritten(ctx: Statements): Promise<void> {
  return ctx.writes.queueChanged ? saveWrites(ctx) : ctx.writes.saved();
}
