// Resuming a session from its store (architecture §2 items 3 and 5): start from the newest verified
// snapshot (snapshots.ts; the initial state without one), re-apply every stored diff after it with the
// strict host rules and the warm-key bindings persisted with them (§5.7, no chain lookups), check each
// stored root, and restore the pending queue, host progress and the payloads of inferences still
// Pending. A reloaded session therefore continues at last + 1 and never signs a nonce twice; its work
// at open is bounded by the snapshot interval, not by the nonce.
import { performance } from 'node:perf_hooks';
import { SessionPhase } from '../hash/root-formula.js';
import { decodeTx } from '../proto/devshard-tx.js';
import type { RecoverFn } from '../signing/primitive.js';
import { type ApplyContext, txEnv, warmKeyLookupFromBindings } from '../state/apply-context.js';
import { applyDiff } from '../state/apply-diff.js';
import { sessionFromEscrow } from '../state/init.js';
import { InferenceStatus, type SessionState } from '../state/types.js';
import { DEFAULT_DIFF_WINDOW, DiffLog } from './diff-log.js';
import { SessionError, SessionErrorCode } from './errors.js';
import { checkHostTx } from './host-tx-check.js';
import { PendingQueue } from './pending-queue.js';
import type { StampCalibration } from './replica.js';
import type { SessionEvent } from './session-context.js';
import { nextTurn, restoreSnapshot, type SnapshotBase } from './snapshots.js';
import type { SessionStore, StoredDiff, StoredSession } from './store.js';
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

export interface ReplayOptions {
  /** The verified replica at `stored.snapshot.nonce`; required when `stored` has a snapshot. */
  readonly base?: SnapshotBase;
  /** Diffs kept in memory (DiffLog window). */
  readonly diffWindow?: number;
}

/**
 * Replay gives the event loop back after this much CPU time: a full replay of 20 000 diffs takes
 * tens of seconds, and the lease of the opening process must keep renewing meanwhile (its renewal
 * timer and Redis replies need the loop; architecture §2 item 1). A turn costs microseconds.
 */
export const REPLAY_TURN_MS = 20;
/** Diffs applied between two looks at the clock (one diff is ~1 ms of signature checks). */
const DIFFS_PER_CLOCK_CHECK = 8;

/**
 * `recover` verifies signatures during replay; `live` (the chain's warm-key lookup) judges the
 * stored pending txs, which no diff has bound yet. `stored.diffs` must continue `options.base` (or
 * start at nonce 1 without one). Yields to the event loop every REPLAY_TURN_MS.
 */
export async function replaySession(
  stored: StoredSession,
  recover: RecoverFn,
  live: ApplyContext,
  options: ReplayOptions = {},
): Promise<Replayed> {
  const { record } = stored;
  const { base } = options;
  if (stored.snapshot && !base) {
    throw new SessionError(
      SessionErrorCode.CorruptStore,
      'replay of a snapshot session needs its base state',
    );
  }
  let state =
    base?.state ??
    sessionFromEscrow(record.escrow, { tag: record.tag, chainParams: record.chainParams }).state;
  const log = new DiffLog(state.root, state.latestNonce, options.diffWindow ?? DEFAULT_DIFF_WINDOW);
  log.restorePayloads(stored.payloads);
  const stamps: StampCalibration = { firstStampNonce: base?.firstStampNonce, calibrated: false };
  const ctx = {
    isWarmKey: warmKeyLookupFromBindings(stored.diffs.flatMap((d) => d.warmKeysBound)),
    recover,
    replay: true,
  };
  let turnStarted = performance.now();
  for (const [i, d] of stored.diffs.entries()) {
    if (i % DIFFS_PER_CLOCK_CHECK === 0 && performance.now() - turnStarted >= REPLAY_TURN_MS) {
      await nextTurn();
      turnStarted = performance.now();
    }
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

/** Diffs read back per store call when a snapshot is refused and the session replays from nonce 1. */
const FULL_REPLAY_CHUNK = 1_000n;

/**
 * Replays a session as the store returned it: from its snapshot when it verifies, otherwise (a
 * `snapshot_rejected` event) from nonce 1, reading the diffs the snapshot covered back from the store.
 */
export async function replayStored(
  store: SessionStore,
  stored: StoredSession,
  recover: RecoverFn,
  live: ApplyContext,
  options: { readonly emit?: (event: SessionEvent) => void; readonly diffWindow?: number } = {},
): Promise<Replayed> {
  const window = options.diffWindow !== undefined ? { diffWindow: options.diffWindow } : {};
  const snapshot = stored.snapshot;
  if (!snapshot) return replaySession(stored, recover, live, window);
  const restored = await restoreSnapshot(store, stored);
  if ('base' in restored) return replaySession(stored, recover, live, { ...window, base: restored.base });
  options.emit?.({ type: 'snapshot_rejected', nonce: snapshot.nonce, reason: restored.rejected });
  const older: StoredDiff[] = [];
  for (let from = 1n; from <= snapshot.nonce; from += FULL_REPLAY_CHUNK) {
    const to =
      from + FULL_REPLAY_CHUNK - 1n < snapshot.nonce ? from + FULL_REPLAY_CHUNK - 1n : snapshot.nonce;
    older.push(...(await store.readDiffs(stored.record.escrowId, from, to)));
  }
  const { snapshot: _refused, ...rest } = stored;
  return replaySession({ ...rest, diffs: [...older, ...stored.diffs] }, recover, live, window);
}
