// What a user-side session persists (devshard-protocol.md §7.1 "keep: last nonce, diff log,
// host_sync_nonce, pending-tx queue, signatures per nonce"; architecture §2.3 write-ahead). The
// interface is storage-agnostic: memory-store.ts for tests and the devnet, Postgres in the proxy and
// controller. Every implementation must pass testing/store-contract.ts unchanged.
import type { DevshardSlotSignature } from '@gonka-gateway/chain';
import type { PayloadWire } from '../json/wire.js';
import type { SignedDiff } from '../signing/diff.js';
import type { SessionChainParams } from '../state/config.js';
import type { WarmKeyBinding } from '../state/effects.js';
import type { EscrowRow } from '../state/init.js';

/** Everything the session is built from, frozen when the escrow is adopted (§10 item 7, §12 #8). */
export interface SessionRecord {
  /** Canonical decimal escrow id (§1). */
  readonly escrowId: string;
  /** The on-chain escrow row as read at creation (amount, creator, slots, config fields). */
  readonly escrow: EscrowRow;
  /** State-root tag hashed into every root (e.g. `v5`). */
  readonly tag: string;
  /** Runtime name: URL prefix `/devshard/{version}` and StartInference.protocol_version (§1, §12 #10). */
  readonly version: string;
  /** refusal/execution timeouts read once from chain params (§12 #8). */
  readonly chainParams: SessionChainParams;
}

/** One signed diff as persisted before it is sent. */
export interface StoredDiff {
  readonly nonce: bigint;
  /** Exactly what was signed; txs keep their bytes (§10.1). */
  readonly diff: SignedDiff;
  /** Our state root after this diff, whether or not the diff carries post_state_root (§7.2 step 1). */
  readonly root: Uint8Array;
  /** Warm-key bindings this diff made, so replay never asks the chain (§5.7). */
  readonly warmKeysBound: readonly WarmKeyBinding[];
  /**
   * The inference payload of this diff's StartInference: refused-timeout voters need it (§7.4). May
   * be pruned once the inference has left Pending.
   */
  readonly payload?: PayloadWire;
}

/**
 * A host-proposed (or our own timeout) tx waiting for the next diff (§7.1). One row per dedup key:
 * txs without a protocol dedup key use `tx:<sha256 hex of bytes>` (see pending-queue.ts).
 */
export interface StoredPendingTx {
  readonly bytes: Uint8Array;
  readonly key: string;
}

/**
 * A root-verified replica state at `nonce` (architecture §2.5), so reopening a long session replays
 * only the diffs after it. `state` is opaque to the store (encoded by the session package).
 */
export interface StoredSnapshot {
  readonly nonce: bigint;
  /** Our state root after `nonce`; equals the stored diff's root at that nonce. */
  readonly root: Uint8Array;
  readonly state: Uint8Array;
}

/** host_sync_nonce of one host (§7.1): the highest nonce it is known to hold. */
export interface StoredHostProgress {
  /** Cold address. */
  readonly address: string;
  readonly nonce: bigint;
}

/** Verified or kept host state signatures at one nonce, one entry per slot (§7.2 step 2, §8.2). */
export interface StoredSignatures {
  readonly nonce: bigint;
  readonly signatures: readonly DevshardSlotSignature[];
}

/**
 * The small writes of a session besides its diffs, grouped so that each rides in one statement
 * (docs/performance.md, "Findings": at most one round trip before the host is called, the diff's
 * own, and at most one after its response). Every field is optional; all of them are fenced by the
 * writer's token together with whatever carries them.
 */
export interface SessionWrites {
  /** Pending txs to add, in order; a key already pending stays as it is (the first wins). */
  readonly addPending?: readonly StoredPendingTx[];
  /**
   * Pending keys to delete: consumed by the diff carrying them, or dropped for good. A key both
   * here and in `addPending` ends up absent.
   */
  readonly deletePending?: readonly string[];
  /** Inference payloads to delete (the inference left Pending, §7.4 needs them no more). */
  readonly prunePayloads?: readonly bigint[];
  /** host_sync_nonce[address] = max(stored, nonce). */
  readonly hostProgress?: readonly StoredHostProgress[];
  /** Merged per nonce and slot; a slot's first signature stays. */
  readonly signatures?: readonly StoredSignatures[];
}

export interface StoredSession {
  readonly record: SessionRecord;
  /**
   * The current fencing token. From `acquire`: the token just minted for the caller (previous + 1,
   * architecture §2.1); from `load`: the newest token minted so far (0 before any acquire).
   */
  readonly fencingToken: bigint;
  /** Highest durable nonce (0 = no diffs). */
  readonly lastNonce: bigint;
  /** Newest snapshot, if any. */
  readonly snapshot?: StoredSnapshot;
  /** Every diff after the snapshot (from nonce 1 without one), in nonce order. */
  readonly diffs: readonly StoredDiff[];
  readonly pendingTxs: readonly StoredPendingTx[];
  /** Host (cold address) → highest nonce it is known to hold (§7.1 host_sync_nonce). */
  readonly hostSync: ReadonlyMap<string, bigint>;
  /**
   * Inference payloads not yet pruned, by inference id (= the nonce of its StartInference); the
   * `payload` field of `diffs` carries the same data for the diffs returned.
   */
  readonly payloads: ReadonlyMap<bigint, PayloadWire>;
  /** The finalize document JSON (§8.3), once written. */
  readonly finalizeDocument?: string;
}

export const SessionStoreErrorCode = {
  NotFound: 'not_found',
  Exists: 'exists',
  /** The writer's fencing token is not the escrow's current one (architecture §2.1, §2.3). */
  StaleToken: 'stale_token',
  /** appendDiff with a nonce other than last + 1. */
  NonceConflict: 'nonce_conflict',
  /** A different finalize document is already stored. */
  DocumentConflict: 'document_conflict',
} as const;
export type SessionStoreErrorCode = (typeof SessionStoreErrorCode)[keyof typeof SessionStoreErrorCode];

export class SessionStoreError extends Error {
  readonly code: SessionStoreErrorCode;

  constructor(code: SessionStoreErrorCode, detail?: string) {
    super(detail ? `${code}: ${detail}` : code);
    this.name = 'SessionStoreError';
    this.code = code;
  }
}

export function isSessionStoreError(error: unknown): error is SessionStoreError {
  return error instanceof SessionStoreError;
}

/**
 * The first of the diffs given to appendDiffs, after checking they are consecutive (nonces n, n + 1,
 * …): anything else is the caller's bug, not a store refusal, so a RangeError.
 */
export function firstOfConsecutive(diffs: readonly StoredDiff[]): StoredDiff {
  const first = diffs[0];
  if (!first) throw new RangeError('appendDiffs of no diff');
  diffs.forEach((d, i) => {
    if (d.nonce !== first.nonce + BigInt(i)) throw new RangeError('appendDiffs: nonces not consecutive');
  });
  return first;
}

/**
 * Persistence of user-side sessions (architecture §2, §4). Fencing: the store mints tokens itself
 * (`acquire`: previous + 1, in the same transaction as the load), so tokens stay unique whatever
 * happens to Redis; every write carries the writer's token and fails with `stale_token` unless it
 * equals the current one. Every method is atomic: on any error nothing was written — except that a failure whose
 * outcome is unknown (connection lost around COMMIT) may have been written, which the caller
 * resolves by repeating the same call (appendDiff of the identical diff is a no-op).
 */
export interface SessionStore {
  /** Creates an empty session (no diffs, token 0); `exists` if the escrow already has one. */
  create(record: SessionRecord): Promise<void>;
  /** Read-only view (no token minted), or undefined. Signatures are read separately. */
  load(escrowId: string): Promise<StoredSession | undefined>;
  /**
   * Takes the session for a new owner: mints token = current + 1 (fencing every older writer at once)
   * and returns the session as of that moment, loaded in the same transaction. `not_found` if missing.
   */
  acquire(escrowId: string): Promise<StoredSession>;
  /**
   * The write-ahead of architecture §2.3. Succeeds when the token is current and `diff.nonce` =
   * last + 1, storing the diff (and its payload) and `writes` in the same transaction — on Postgres
   * one statement, the one round trip a chat request makes before its host is called (a statement
   * other sessions' appends may share, each with its own fencing check: it resolves only once that
   * statement has returned, and a refusal of its check fails it alone).
   * Appending a diff identical (txs, user signature, post_state_root) to the one stored at its nonce
   * is a no-op success that writes nothing (the call that stored it stored its writes too), so an
   * ambiguous commit is resolved by repeating the call; any other nonce gives `nonce_conflict`.
   */
  appendDiff(escrowId: string, diff: StoredDiff, fencingToken: bigint, writes?: SessionWrites): Promise<void>;
  /**
   * appendDiff of consecutive diffs (nonces last + 1, last + 2, …) in one transaction, all or
   * nothing, with one fencing check and `writes` once: the diffs a session composed while its
   * previous write-ahead was in flight (pipeline.ts), so one escrow is not limited to one diff per
   * round trip. Repeating the identical call after it landed is a no-op success that writes
   * nothing (every diff identical to the one stored at its nonce); any other overlap with stored
   * nonces, or a first nonce past last + 1, gives `nonce_conflict`. Optional: a session whose store
   * lacks it writes one diff per write-ahead.
   */
  appendDiffs?(
    escrowId: string,
    diffs: readonly StoredDiff[],
    fencingToken: bigint,
    writes?: SessionWrites,
  ): Promise<void>;
  /** Diffs `from`…`to` inclusive, in nonce order (catch-up beyond the in-memory window, §7.3). */
  readDiffs(escrowId: string, from: bigint, to: bigint): Promise<StoredDiff[]>;
  /**
   * `writes` in one transaction (on Postgres one statement) when the token is current; nothing
   * otherwise. The write after a host's response, and whatever waits for no diff.
   */
  saveWrites(escrowId: string, writes: SessionWrites, fencingToken: bigint): Promise<void>;
  /** Stores a snapshot at a nonce that has a stored diff; older snapshots may be discarded. */
  saveSnapshot(escrowId: string, snapshot: StoredSnapshot, fencingToken: bigint): Promise<void>;
  /** Slot → signature at `nonce` (empty when none). */
  loadSignatures(escrowId: string, nonce: bigint): Promise<Map<number, Uint8Array>>;
  /** Stores the finalize document once; the same text again is a no-op, other text `document_conflict`. */
  saveFinalizeDocument(escrowId: string, json: string, fencingToken: bigint): Promise<void>;
}
