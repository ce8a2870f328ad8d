// What a user-side session persists (devshard-protocol.md §7.1 "keep: last nonce, diff log,
// host_sync_nonce, pending-tx queue, signatures per nonce"; architecture §2.3 write-ahead). The
// interface is storage-agnostic: memory-store.ts for tests and the devnet, Postgres in the proxy and
// controller. Every implementation must pass store-contract.ts unchanged.
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

/** A host-proposed (or our own timeout) tx waiting for the next diff, with its dedup key (§7.1). */
export interface StoredPendingTx {
  readonly bytes: Uint8Array;
  readonly key?: string;
}

export interface StoredSession {
  readonly record: SessionRecord;
  /** Highest fencing token the store has seen for this escrow. */
  readonly fencingToken: bigint;
  /** Every diff, nonces 1…n in order. */
  readonly diffs: readonly StoredDiff[];
  readonly pendingTxs: readonly StoredPendingTx[];
  /** Host (cold address) → highest nonce it is known to hold (§7.1 host_sync_nonce). */
  readonly hostSync: ReadonlyMap<string, bigint>;
  /** The finalize document JSON (§8.3), once written. */
  readonly finalizeDocument?: string;
}

export const SessionStoreErrorCode = {
  NotFound: 'not_found',
  Exists: 'exists',
  /** The writer's fencing token is older than the newest one seen (architecture §2.3). */
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
 * Persistence of user-side sessions. Fencing: `acquire`, `appendDiff`, `savePendingTxs` and
 * `saveFinalizeDocument` carry the writer's token and fail with `stale_token` when it is lower than
 * the highest token seen for the escrow (an equal or higher token is accepted and becomes the
 * highest). Host progress and signatures are monotonic facts and need no token.
 */
export interface SessionStore {
  /** Creates an empty session (no diffs); `exists` if the escrow already has one. */
  create(record: SessionRecord): Promise<void>;
  /** Everything needed to resume, or undefined. Signatures are read separately (loadSignatures). */
  load(escrowId: string): Promise<StoredSession | undefined>;
  /** Registers a new owner's token, fencing every older writer at once. */
  acquire(escrowId: string, fencingToken: bigint): Promise<void>;
  /**
   * The write-ahead of architecture §2.3: succeeds only when `diff.nonce` = last + 1 (`nonce_conflict`
   * otherwise) and the token is current (`stale_token`). Atomic: either the diff is stored or nothing.
   */
  appendDiff(escrowId: string, diff: StoredDiff, fencingToken: bigint): Promise<void>;
  /** Replaces the pending-tx queue. */
  savePendingTxs(escrowId: string, txs: readonly StoredPendingTx[], fencingToken: bigint): Promise<void>;
  /** host_sync_nonce[address] = max(stored, nonce). */
  saveHostProgress(escrowId: string, address: string, nonce: bigint): Promise<void>;
  /** Merges verified state signatures at `nonce` (one entry per slot); a slot's first signature stays. */
  saveSignatures(
    escrowId: string,
    nonce: bigint,
    signatures: readonly DevshardSlotSignature[],
  ): Promise<void>;
  /** Slot → signature at `nonce` (empty when none). */
  loadSignatures(escrowId: string, nonce: bigint): Promise<Map<number, Uint8Array>>;
  /** Stores the finalize document once; the same text again is a no-op, other text `document_conflict`. */
  saveFinalizeDocument(escrowId: string, json: string, fencingToken: bigint): Promise<void>;
}
