// Resuming a session from its store (architecture §2.2, §2.3): rebuild the state by re-applying every
// stored diff with the strict host rules and the warm-key bindings persisted with them (§5.7, no
// chain lookups), check each stored root, and restore the pending queue, host progress and the
// payloads of inferences still Pending. A reloaded session therefore continues at last + 1 and never
// signs a nonce twice.
import { SessionPhase } from '../hash/state-root.js';
import { decodeTx } from '../proto/devshard-tx.js';
import type { RecoverFn } from '../signing/primitive.js';
import { applyDiff } from '../state/apply-diff.js';
import { type ApplyContext, txEnv, warmKeyLookupFromBindings } from '../state/context.js';
import { sessionFromEscrow } from '../state/init.js';
import { InferenceStatus, type SessionState } from '../state/types.js';
import type { StampCalibration } from './context.js';
import { DiffLog } from './diff-log.js';
import { SessionError, SessionErrorCode } from './errors.js';
import { checkHostTx } from './host-tx-check.js';
import { PendingQueue } from './pending-queue.js';
import type { StoredSession } from './store.js';
import { isStamped } from './write-ahead.js';

export interface Replayed {
  readonly state: SessionState;
  readonly log: DiffLog;
  readonly pending: PendingQueue;
  readonly hostSync: Map<string, bigint>;
  readonly stamps: StampCalibration;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/**
 * `recover` verifies signatures during replay; `live` (the chain's warm-key lookup) judges the
 * stored pending txs, which no diff has bound yet.
 */
export function replaySession(stored: StoredSession, recover: RecoverFn, live: ApplyContext): Replayed {
  const { record } = stored;
  let { state } = sessionFromEscrow(record.escrow, { tag: record.tag, chainParams: record.chainParams });
  const log = new DiffLog(state.root);
  const stamps: StampCalibration = { firstStampNonce: undefined, calibrated: false };
  const ctx = {
    isWarmKey: warmKeyLookupFromBindings(stored.diffs.flatMap((d) => d.warmKeysBound)),
    recover,
    replay: true,
  };
  for (const d of stored.diffs) {
    let next: SessionState;
    try {
      next = applyDiff(state, d.diff, ctx).state;
    } catch (error) {
      throw new SessionError(
        SessionErrorCode.CorruptStore,
        `diff ${d.nonce}: ${(error as Error).message}`,
        error,
      );
    }
    if (!sameBytes(next.root, d.root)) {
      throw new SessionError(
        SessionErrorCode.CorruptStore,
        `diff ${d.nonce}: replayed root differs from the stored one`,
      );
    }
    if (stamps.firstStampNonce === undefined && d.diff.txs.some((t) => isStamped(state, t.tx))) {
      stamps.firstStampNonce = d.nonce;
    }
    state = next;
    log.append(d);
  }
  log.prunePayloads((id) => state.inferences.get(id)?.status === InferenceStatus.Pending);

  // Queued txs that a stored diff already carried, or that can no longer apply, are dropped here.
  const pending = new PendingQueue();
  const env = txEnv(state.latestNonce + 1n, { ...live, recover });
  for (const p of stored.pendingTxs) {
    let decoded: ReturnType<typeof decodeTx>;
    try {
      decoded = decodeTx(p.bytes);
    } catch {
      continue;
    }
    const { tx } = decoded;
    const keep =
      tx.kind === 'timeoutInference'
        ? state.phase !== SessionPhase.Settlement &&
          [InferenceStatus.Pending, InferenceStatus.Started].includes(
            state.inferences.get(tx.msg.inferenceId)?.status as 0 | 1,
          )
        : checkHostTx(state, tx, env) === undefined;
    if (keep) pending.add(decoded);
  }
  return { state, log, pending, hostSync: new Map(stored.hostSync), stamps };
}
