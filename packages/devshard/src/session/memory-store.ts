// SessionStore in memory: for tests, benchmarks and the devnet demo. Each method runs to completion
// without awaiting, so concurrent callers see the same atomic conditional writes a database gives.
// Byte arrays are copied in and out, so no caller can alter what is stored.
import type { DevshardSlotSignature } from '@gonka-gateway/chain';
import {
  type SessionRecord,
  type SessionStore,
  SessionStoreError,
  SessionStoreErrorCode,
  type StoredDiff,
  type StoredPendingTx,
  type StoredSession,
} from './store.js';

interface Entry {
  record: SessionRecord;
  token: bigint;
  diffs: StoredDiff[];
  pending: StoredPendingTx[];
  hostSync: Map<string, bigint>;
  signatures: Map<bigint, Map<number, Uint8Array>>;
  document?: string;
}

const copyPending = (txs: readonly StoredPendingTx[]) =>
  txs.map((t) => ({ bytes: t.bytes.slice(), ...(t.key !== undefined ? { key: t.key } : {}) }));

export class InMemorySessionStore implements SessionStore {
  readonly #entries = new Map<string, Entry>();

  async create(record: SessionRecord): Promise<void> {
    if (this.#entries.has(record.escrowId))
      throw new SessionStoreError(SessionStoreErrorCode.Exists, record.escrowId);
    this.#entries.set(record.escrowId, {
      record,
      token: 0n,
      diffs: [],
      pending: [],
      hostSync: new Map(),
      signatures: new Map(),
    });
  }

  async load(escrowId: string): Promise<StoredSession | undefined> {
    const e = this.#entries.get(escrowId);
    if (!e) return undefined;
    return {
      record: e.record,
      fencingToken: e.token,
      diffs: [...e.diffs],
      pendingTxs: copyPending(e.pending),
      hostSync: new Map(e.hostSync),
      ...(e.document !== undefined ? { finalizeDocument: e.document } : {}),
    };
  }

  async acquire(escrowId: string, fencingToken: bigint): Promise<void> {
    this.#fenced(escrowId, fencingToken);
  }

  async appendDiff(escrowId: string, diff: StoredDiff, fencingToken: bigint): Promise<void> {
    const e = this.#entry(escrowId);
    const expected = BigInt(e.diffs.length) + 1n;
    if (fencingToken < e.token) throw this.#stale(fencingToken, e.token);
    if (diff.nonce !== expected) {
      throw new SessionStoreError(
        SessionStoreErrorCode.NonceConflict,
        `expected ${expected}, got ${diff.nonce}`,
      );
    }
    e.token = fencingToken;
    e.diffs.push(diff);
  }

  async savePendingTxs(
    escrowId: string,
    txs: readonly StoredPendingTx[],
    fencingToken: bigint,
  ): Promise<void> {
    this.#fenced(escrowId, fencingToken).pending = copyPending(txs);
  }

  async saveHostProgress(escrowId: string, address: string, nonce: bigint): Promise<void> {
    const e = this.#entry(escrowId);
    if ((e.hostSync.get(address) ?? 0n) < nonce) e.hostSync.set(address, nonce);
  }

  async saveSignatures(
    escrowId: string,
    nonce: bigint,
    signatures: readonly DevshardSlotSignature[],
  ): Promise<void> {
    const e = this.#entry(escrowId);
    const atNonce = e.signatures.get(nonce) ?? new Map<number, Uint8Array>();
    e.signatures.set(nonce, atNonce);
    for (const s of signatures) if (!atNonce.has(s.slotId)) atNonce.set(s.slotId, s.signature.slice());
  }

  async loadSignatures(escrowId: string, nonce: bigint): Promise<Map<number, Uint8Array>> {
    const atNonce = this.#entry(escrowId).signatures.get(nonce);
    return new Map([...(atNonce ?? [])].map(([slot, sig]) => [slot, sig.slice()]));
  }

  async saveFinalizeDocument(escrowId: string, json: string, fencingToken: bigint): Promise<void> {
    const e = this.#fenced(escrowId, fencingToken);
    if (e.document !== undefined && e.document !== json) {
      throw new SessionStoreError(SessionStoreErrorCode.DocumentConflict, escrowId);
    }
    e.document = json;
  }

  #entry(escrowId: string): Entry {
    const e = this.#entries.get(escrowId);
    if (!e) throw new SessionStoreError(SessionStoreErrorCode.NotFound, escrowId);
    return e;
  }

  #fenced(escrowId: string, token: bigint): Entry {
    const e = this.#entry(escrowId);
    if (token < e.token) throw this.#stale(token, e.token);
    e.token = token;
    return e;
  }

  #stale(token: bigint, current: bigint): SessionStoreError {
    return new SessionStoreError(SessionStoreErrorCode.StaleToken, `token ${token} < ${current}`);
  }
}
