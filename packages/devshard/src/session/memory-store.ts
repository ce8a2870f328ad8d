// SessionStore in memory: for tests, benchmarks and the devnet demo. Each method runs to completion
// without awaiting, so concurrent callers see the same atomic conditional writes a database gives.
// Byte arrays are copied in and out, so no caller can alter what is stored.
import type { PayloadWire } from '../json/wire.js';
import {
  firstOfConsecutive,
  type SessionRecord,
  type SessionStore,
  SessionStoreError,
  SessionStoreErrorCode,
  type SessionWrites,
  type StoredDiff,
  type StoredSession,
  type StoredSnapshot,
} from './store.js';

interface Entry {
  record: SessionRecord;
  token: bigint;
  /** Diffs dropped from the front (compaction, `keepDiffs`): `diffs[0]` is nonce `dropped + 1`. */
  dropped: number;
  diffs: StoredDiff[];
  /** Dedup key → tx, in insertion order (Map keeps it). */
  pending: Map<string, Uint8Array>;
  payloads: Map<bigint, PayloadWire>;
  snapshot?: StoredSnapshot;
  hostSync: Map<string, bigint>;
  signatures: Map<bigint, Map<number, Uint8Array>>;
  document?: string;
}

const sameBytes = (a: Uint8Array | undefined, b: Uint8Array | undefined) =>
  Buffer.from(a ?? new Uint8Array(0)).equals(Buffer.from(b ?? new Uint8Array(0)));

/** The signed content of a diff: what a second append must repeat exactly to be a no-op. */
export function sameSignedDiff(a: StoredDiff, b: StoredDiff): boolean {
  return (
    a.nonce === b.nonce &&
    sameBytes(a.diff.userSig, b.diff.userSig) &&
    sameBytes(a.diff.postStateRoot, b.diff.postStateRoot) &&
    a.diff.txs.length === b.diff.txs.length &&
    a.diff.txs.every((t, i) => sameBytes(t.bytes, b.diff.txs[i]!.bytes))
  );
}

const copyPayload = (p: PayloadWire): PayloadWire => ({ ...p, prompt: p.prompt.slice() });

/** A deep copy of a diff without its payload (payloads are kept apart, so pruning is one delete). */
function copyDiff(d: StoredDiff): StoredDiff {
  return {
    nonce: d.nonce,
    diff: {
      nonce: d.diff.nonce,
      txs: d.diff.txs.map((t) => ({ bytes: t.bytes.slice(), tx: t.tx })),
      userSig: d.diff.userSig.slice(),
      postStateRoot: d.diff.postStateRoot.slice(),
    },
    root: d.root.slice(),
    warmKeysBound: d.warmKeysBound.map((b) => ({ ...b })),
  };
}

/** The same effects, in the same order, as the Postgres statement's CTEs (postgres-session-store.ts). */
function applyWrites(e: Entry, w: SessionWrites): void {
  for (const t of w.addPending ?? []) if (!e.pending.has(t.key)) e.pending.set(t.key, t.bytes.slice());
  for (const key of w.deletePending ?? []) e.pending.delete(key);
  for (const id of w.prunePayloads ?? []) e.payloads.delete(id);
  for (const h of w.hostProgress ?? [])
    if ((e.hostSync.get(h.address) ?? 0n) < h.nonce) e.hostSync.set(h.address, h.nonce);
  for (const { nonce, signatures } of w.signatures ?? []) {
    const atNonce = e.signatures.get(nonce) ?? new Map<number, Uint8Array>();
    e.signatures.set(nonce, atNonce);
    for (const s of signatures) if (!atNonce.has(s.slotId)) atNonce.set(s.slotId, s.signature.slice());
  }
}

/** Drops the diffs and signatures at or below nonce `upTo` (never the snapshot's own diff). */
function compact(e: Entry, upTo: number): void {
  const drop = Math.min(upTo, Number(e.snapshot?.nonce ?? 0n) - 1) - e.dropped;
  if (drop <= 0) return;
  e.diffs.splice(0, drop);
  e.dropped += drop;
  for (const nonce of e.signatures.keys()) if (nonce <= BigInt(e.dropped)) e.signatures.delete(nonce);
}

export interface InMemorySessionStoreOptions {
  /**
   * Drop the diffs (and their signatures) more than this many nonces behind the newest snapshot, so
   * the store of a session driven to max_nonce stays flat (benchmarks). Reading a dropped diff
   * throws. Default: every diff is kept.
   */
  readonly keepDiffs?: number;
}

export class InMemorySessionStore implements SessionStore {
  readonly #entries = new Map<string, Entry>();
  readonly #keepDiffs: number | undefined;

  constructor(options: InMemorySessionStoreOptions = {}) {
    this.#keepDiffs = options.keepDiffs;
  }

  async create(record: SessionRecord): Promise<void> {
    if (this.#entries.has(record.escrowId))
      throw new SessionStoreError(SessionStoreErrorCode.Exists, record.escrowId);
    this.#entries.set(record.escrowId, {
      record,
      token: 0n,
      dropped: 0,
      diffs: [],
      pending: new Map(),
      payloads: new Map(),
      hostSync: new Map(),
      signatures: new Map(),
    });
  }

  /**
   * Creates a session far into its nonces without every diff before (tests): as if the diffs before
   * `diff` had been compacted away (keepDiffs), with `snapshot` at `diff`'s nonce.
   */
  seed(record: SessionRecord, snapshot: StoredSnapshot, diff: StoredDiff): void {
    if (this.#entries.has(record.escrowId))
      throw new SessionStoreError(SessionStoreErrorCode.Exists, record.escrowId);
    if (snapshot.nonce !== diff.nonce) throw new RangeError('the snapshot must be at the diff');
    this.#entries.set(record.escrowId, {
      record,
      token: 0n,
      dropped: Number(diff.nonce) - 1,
      diffs: [copyDiff(diff)],
      pending: new Map(),
      payloads: new Map(),
      snapshot: { nonce: snapshot.nonce, root: snapshot.root.slice(), state: snapshot.state.slice() },
      hostSync: new Map(),
      signatures: new Map(),
    });
  }

  async load(escrowId: string): Promise<StoredSession | undefined> {
    const e = this.#entries.get(escrowId);
    return e ? this.#view(e) : undefined;
  }

  async acquire(escrowId: string): Promise<StoredSession> {
    const e = this.#entry(escrowId);
    e.token += 1n;
    return this.#view(e);
  }

  async appendDiff(
    escrowId: string,
    diff: StoredDiff,
    fencingToken: bigint,
    writes: SessionWrites = {},
  ): Promise<void> {
    const e = this.#fenced(escrowId, fencingToken);
    const expected = BigInt(e.dropped + e.diffs.length) + 1n;
    if (diff.nonce !== expected) {
      const existing =
        diff.nonce > BigInt(e.dropped) && diff.nonce < expected
          ? e.diffs[Number(diff.nonce) - 1 - e.dropped]
          : undefined;
      if (existing && sameSignedDiff(existing, diff)) return;
      throw new SessionStoreError(
        SessionStoreErrorCode.NonceConflict,
        `expected ${expected}, got ${diff.nonce}`,
      );
    }
    e.diffs.push(copyDiff(diff));
    if (diff.payload) e.payloads.set(diff.nonce, copyPayload(diff.payload));
    applyWrites(e, writes);
  }

  async appendDiffs(
    escrowId: string,
    diffs: readonly StoredDiff[],
    fencingToken: bigint,
    writes: SessionWrites = {},
  ): Promise<void> {
    const e = this.#fenced(escrowId, fencingToken);
    const expected = BigInt(e.dropped + e.diffs.length) + 1n;
    const first = firstOfConsecutive(diffs);
    if (first.nonce !== expected) {
      // The identical call again (an ambiguous commit resolved by repeating it): every diff stored.
      const stored = (d: StoredDiff) =>
        d.nonce > BigInt(e.dropped) && d.nonce < expected
          ? e.diffs[Number(d.nonce) - 1 - e.dropped]
          : undefined;
      if (
        diffs.every((d) => {
          const s = stored(d);
          return s !== undefined && sameSignedDiff(s, d);
        })
      )
        return;
      throw new SessionStoreError(
        SessionStoreErrorCode.NonceConflict,
        `expected ${expected}, got ${first.nonce}…${first.nonce + BigInt(diffs.length - 1)}`,
      );
    }
    for (const d of diffs) {
      e.diffs.push(copyDiff(d));
      if (d.payload) e.payloads.set(d.nonce, copyPayload(d.payload));
    }
    applyWrites(e, writes);
  }

  async readDiffs(escrowId: string, from: bigint, to: bigint): Promise<StoredDiff[]> {
    const e = this.#entry(escrowId);
    const lo = from < 1n ? 1n : from;
    if (lo <= BigInt(e.dropped) && lo <= to)
      throw new RangeError(`diffs up to ${e.dropped} were compacted away (keepDiffs)`);
    const out: StoredDiff[] = [];
    for (let n = lo; n <= to && n <= BigInt(e.dropped + e.diffs.length); n++)
      out.push(this.#withPayload(e, e.diffs[Number(n) - 1 - e.dropped]!));
    return out;
  }

  async saveWrites(escrowId: string, writes: SessionWrites, fencingToken: bigint): Promise<void> {
    applyWrites(this.#fenced(escrowId, fencingToken), writes);
  }

  async saveSnapshot(escrowId: string, snapshot: StoredSnapshot, fencingToken: bigint): Promise<void> {
    const e = this.#fenced(escrowId, fencingToken);
    if (snapshot.nonce <= BigInt(e.dropped) || snapshot.nonce > BigInt(e.dropped + e.diffs.length)) {
      throw new SessionStoreError(
        SessionStoreErrorCode.NonceConflict,
        `no diff at snapshot nonce ${snapshot.nonce}`,
      );
    }
    if (e.snapshot && e.snapshot.nonce >= snapshot.nonce) return;
    e.snapshot = { nonce: snapshot.nonce, root: snapshot.root.slice(), state: snapshot.state.slice() };
    if (this.#keepDiffs !== undefined) compact(e, Number(snapshot.nonce) - this.#keepDiffs - 1);
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

  #view(e: Entry): StoredSession {
    const from = e.snapshot ? Number(e.snapshot.nonce) - e.dropped : 0;
    return {
      record: e.record,
      fencingToken: e.token,
      lastNonce: BigInt(e.dropped + e.diffs.length),
      ...(e.snapshot
        ? {
            snapshot: {
              nonce: e.snapshot.nonce,
              root: e.snapshot.root.slice(),
              state: e.snapshot.state.slice(),
            },
          }
        : {}),
      diffs: e.diffs.slice(from).map((d) => this.#withPayload(e, d)),
      pendingTxs: [...e.pending].map(([key, bytes]) => ({ key, bytes: bytes.slice() })),
      hostSync: new Map(e.hostSync),
      payloads: new Map([...e.payloads].map(([id, p]) => [id, copyPayload(p)])),
      ...(e.document !== undefined ? { finalizeDocument: e.document } : {}),
    };
  }

  #withPayload(e: Entry, d: StoredDiff): StoredDiff {
    const payload = e.payloads.get(d.nonce);
    return payload ? { ...copyDiff(d), payload: copyPayload(payload) } : copyDiff(d);
  }

  #entry(escrowId: string): Entry {
    const e = this.#entries.get(escrowId);
    if (!e) throw new SessionStoreError(SessionStoreErrorCode.NotFound, escrowId);
    return e;
  }

  /** Writes need the current token exactly: older owners are fenced, unminted tokens never valid. */
  #fenced(escrowId: string, token: bigint): Entry {
    const e = this.#entry(escrowId);
    if (token !== e.token) {
      throw new SessionStoreError(
        SessionStoreErrorCode.StaleToken,
        `token ${token} is not current (${e.token})`,
      );
    }
    return e;
  }
}
