// Session snapshots in the store (architecture §2 item 5): every `snapshotEvery` diffs
// (more apart once many records are live: snapshotInterval) the replica after a successful append is
// encoded and saved in the background, and `open` starts from the newest snapshot that verifies
// instead of replaying from nonce 1. A snapshot is trusted only when its recomputed root equals the
// root it claims, the store's snapshot root, and the stored diff root at its nonce, and its escrow,
// group and config equal the session record's; otherwise it is ignored (a `snapshot_rejected` event)
// and the session replays every diff. Saving is never on a request's path: a failed save is a
// `store_error` event and the next due append tries again.
import { sessionFromEscrow } from '../state/init.js';
import {
  decodeStateSnapshot,
  decodeStateSnapshotSteps,
  encodeStateSnapshot,
  encodeStateSnapshotSteps,
} from '../state/snapshot.js';
import type { SessionState } from '../state/types.js';
import { inBackground, type SessionContext } from './session-context.js';
import type { SessionRecord, SessionStore, StoredSession } from './store.js';

/** A snapshot is saved every this many diffs by default. */
export const DEFAULT_SNAPSHOT_EVERY = 500;

/**
 * Live records per diff of snapshot interval once the live set is large. A snapshot
 * encodes and writes every live record (≈ 135 B each, sent to Postgres as hex text), ≈ 75 ms of
 * CPU at 20 000 live records plus the GC of its ≈ 11 MB of buffers and strings; at a fixed
 * interval that is work per request growing with the live set. One snapshot per
 * live/LIVE_RECORDS_PER_SNAPSHOT_DIFF diffs keeps it at most what it costs at
 * snapshotEvery × LIVE_RECORDS_PER_SNAPSHOT_DIFF live records (5 000 by default). The price is a
 * longer replay on reopen, bounded the same way: at most max(snapshotEvery, live / 10) − 1 diffs
 * after the snapshot, whose decode itself grows with the live set. Restores are unchanged: the
 * newest snapshot plus every stored diff after it (diffs are never dropped).
 */
export const LIVE_RECORDS_PER_SNAPSHOT_DIFF = 10;

/** Diffs between snapshots of a state with `liveRecords` live records (see above). */
export function snapshotInterval(snapshotEvery: bigint, liveRecords: number): bigint {
  const byLive = BigInt(Math.ceil(liveRecords / LIVE_RECORDS_PER_SNAPSHOT_DIFF));
  return byLive > snapshotEvery ? byLive : snapshotEvery;
}

/** Session-layer envelope around the state snapshot (the state has its own version byte). */
const ENVELOPE_VERSION = 1;
const ENVELOPE_BYTES = 10;

/** What the session resumes from: the replica at the snapshot nonce and its stamp calibration. */
export interface SnapshotBase {
  readonly state: SessionState;
  /** §12 #1: the first nonce whose diff carried a height-stamped tx, if at or before the snapshot. */
  readonly firstStampNonce: bigint | undefined;
}

/** Envelope: u8 version ‖ u8 has-stamp ‖ u64be first stamp nonce ‖ state snapshot. */
export function encodeSessionSnapshot(state: SessionState, firstStampNonce: bigint | undefined): Uint8Array {
  return envelope(encodeStateSnapshot(state), firstStampNonce);
}

/** Resolves on the event loop's next check phase: timers and I/O callbacks run first. */
export const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** encodeSessionSnapshot, giving the event loop back between steps (requests keep flowing). */
async function encodeSessionSnapshotInTurns(
  state: SessionState,
  firstStampNonce: bigint | undefined,
): Promise<Uint8Array> {
  const steps = encodeStateSnapshotSteps(state);
  for (;;) {
    const next = steps.next();
    if (next.done) return envelope(next.value, firstStampNonce);
    await nextTurn();
  }
}

function envelope(inner: Uint8Array, firstStampNonce: bigint | undefined): Uint8Array {
  const out = new Uint8Array(ENVELOPE_BYTES + inner.length);
  out[0] = ENVELOPE_VERSION;
  out[1] = firstStampNonce === undefined ? 0 : 1;
  new DataView(out.buffer).setBigUint64(2, firstStampNonce ?? 0n);
  out.set(inner, ENVELOPE_BYTES);
  return out;
}

export function decodeSessionSnapshot(bytes: Uint8Array): SnapshotBase {
  return fromEnvelope(bytes, decodeStateSnapshot(checkEnvelope(bytes)));
}

/**
 * decodeSessionSnapshot, giving the event loop back between steps: a session opens while its lease
 * keeps renewing (the renewal timer needs the loop; architecture §2 item 1).
 */
export async function decodeSessionSnapshotInTurns(bytes: Uint8Array): Promise<SnapshotBase> {
  const steps = decodeStateSnapshotSteps(checkEnvelope(bytes));
  for (;;) {
    const next = steps.next();
    if (next.done) return fromEnvelope(bytes, next.value);
    await nextTurn();
  }
}

/** The state snapshot inside a known envelope. */
function checkEnvelope(bytes: Uint8Array): Uint8Array {
  if (bytes.length < ENVELOPE_BYTES || bytes[0] !== ENVELOPE_VERSION || bytes[1]! > 1) {
    throw new Error(`unknown snapshot envelope (version ${bytes[0]})`);
  }
  return bytes.subarray(ENVELOPE_BYTES);
}

function fromEnvelope(bytes: Uint8Array, state: SessionState): SnapshotBase {
  const stamp = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getBigUint64(2);
  if (bytes[1] === 1 && stamp > state.latestNonce) throw new Error('stamp nonce beyond the snapshot');
  return { state, firstStampNonce: bytes[1] === 1 ? stamp : undefined };
}

const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

/** Fields the snapshot repeats from the session record: they must be the record's exactly. */
function identityMismatch(state: SessionState, record: SessionRecord): string | undefined {
  const { state: initial } = sessionFromEscrow(record.escrow, {
    tag: record.tag,
    chainParams: record.chainParams,
  });
  if (state.escrowId !== initial.escrowId) return 'escrow id';
  if (state.tag !== initial.tag) return 'tag';
  if (state.creator !== initial.creator) return 'creator';
  const slots = state.group.slots;
  if (slots.length !== initial.group.slots.length || slots.some((a, i) => a !== initial.group.slots[i])) {
    return 'group';
  }
  for (const key of Object.keys(initial.config) as (keyof SessionState['config'])[]) {
    if (state.config[key] !== initial.config[key]) return `config ${key}`;
  }
  return undefined;
}

/**
 * Verifies the stored snapshot (see the file comment). Returns the base to replay from, or the
 * reason it was refused.
 */
export async function restoreSnapshot(
  store: SessionStore,
  stored: StoredSession,
): Promise<{ base: SnapshotBase } | { rejected: string }> {
  const snapshot = stored.snapshot;
  if (!snapshot) return { rejected: 'no snapshot' };
  let base: SnapshotBase;
  try {
    base = await decodeSessionSnapshotInTurns(snapshot.state);
  } catch (error) {
    return { rejected: (error as Error).message };
  }
  const { state } = base;
  if (state.latestNonce !== snapshot.nonce) return { rejected: `state is at nonce ${state.latestNonce}` };
  if (!same(state.root, snapshot.root)) return { rejected: 'root differs from the stored snapshot root' };
  const mismatch = identityMismatch(state, stored.record);
  if (mismatch) return { rejected: `${mismatch} differs from the session record` };
  const first = stored.diffs[0];
  if (first ? first.nonce !== snapshot.nonce + 1n : stored.lastNonce !== snapshot.nonce) {
    return { rejected: 'stored diffs do not continue the snapshot' };
  }
  let atNonce: Awaited<ReturnType<SessionStore['readDiffs']>>;
  try {
    atNonce = await store.readDiffs(stored.record.escrowId, snapshot.nonce, snapshot.nonce);
  } catch (error) {
    return { rejected: `reading the diff at ${snapshot.nonce}: ${(error as Error).message}` };
  }
  const diff = atNonce[0];
  if (!diff || diff.nonce !== snapshot.nonce || !same(diff.root, state.root)) {
    return { rejected: `root differs from the stored diff root at ${snapshot.nonce}` };
  }
  return { base };
}

/**
 * Called after every successful append: when snapshotInterval diffs (`snapshotEvery`, more with
 * many live records) have passed since the last snapshot, the state just committed becomes due and
 * a background writer (one per session) saves the newest due state once the event loop is free.
 * States are immutable values, so later diffs do not affect what is encoded. Where the schedule
 * stands is `ctx.snapshots` (snapshot-progress.ts), written only here.
 */
export function scheduleSnapshot(ctx: SessionContext): void {
  const snapshotEvery = BigInt(ctx.settings.snapshotEvery);
  if (snapshotEvery <= 0n) return;
  const { state } = ctx.replica;
  const every = snapshotInterval(snapshotEvery, state.inferences.size);
  const tracker = ctx.snapshots;
  if (!tracker.offer({ state, firstStampNonce: ctx.replica.stamps.firstStampNonce }, every)) return;
  inBackground(ctx, 'saveSnapshot', async () => {
    try {
      for (;;) {
        // Yield first: the request that made the snapshot due continues before any encoding.
        await nextTurn();
        const due = tracker.takeDue();
        if (!due) return;
        const { state } = due;
        const at = state.latestNonce;
        try {
          const bytes = await encodeSessionSnapshotInTurns(state, due.firstStampNonce);
          await ctx.guard.fencedWrite('saveSnapshot', (token) =>
            ctx.store.saveSnapshot(ctx.escrowId, { nonce: at, root: state.root, state: bytes }, token),
          );
        } catch (error) {
          // Try again a tenth of an interval later (the next due append), not on every diff.
          tracker.failed(at + (every / 10n > 1n ? every / 10n : 1n));
          throw error;
        }
        tracker.saved(at);
        ctx.emit({ type: 'snapshot_saved', nonce: at });
      }
    } finally {
      tracker.stopped();
    }
  });
}
