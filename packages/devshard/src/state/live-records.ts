// The live-record map of a session as a persistent value with an incremental live_hash (§6).
// Records sit in ascending id in chunks of up to CHUNK; a new version copies one chunk and the
// chunk list, and shares every other chunk with its parent, so older versions stay intact and usable
// (a rejected diff or an unpersisted composition changes nothing). live_hash is SHA-256 over the
// entries framed as InferencesMapProto field 1, in ascending id: the same byte stream as
// liveRecordsHash, so the same digest. Each version keeps the SHA-256 state after every chunk
// (a midstate) and rehashes only from its first changed chunk: a Start appends to the last chunk,
// Confirm/Finish touch recent ones; sealing at the front rehashes everything once per seal.
// Records are kept as state/record.ts Records (compact layout) and ordered by their stored ids, so a
// lookup compares numbers, not bigints.
import { createHash, type Hash } from 'node:crypto';
import { framedEntryLength } from '../hash/rest-hash.js';
import { asRecord, Record, type StoredInt, storedInt } from './record.js';
import { type InferenceRecord, InferenceStatus } from './types.js';

const CHUNK = 32;

type Chunk = readonly Record[];

const keyOf = Record.idKey;

/**
 * Order of stored ids. A number and a bigint compare by their mathematical values, and an id has
 * one stored form, so equal ids are `===`.
 */
function compareKeys(a: StoredInt, b: StoredInt): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Index of the first record with id ≥ `key` in an ascending chunk. */
function lowerBound(chunk: Chunk, key: StoredInt): number {
  let lo = 0;
  let hi = chunk.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (keyOf(chunk[mid]!) < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Reused framing buffer: hash updates copy their input, so it never escapes a call. */
let scratch = Buffer.alloc(CHUNK * 512);

/** Feeds `0a ‖ varint(len) ‖ entry` for every record of the chunk into `h`. */
function hashChunk(h: Hash, chunk: Chunk): void {
  let total = 0;
  for (const r of chunk) total += framedEntryLength(r.entryText.length);
  if (total > scratch.length) scratch = Buffer.alloc(Math.max(total, scratch.length * 2));
  const buf = scratch;
  let at = 0;
  for (const r of chunk) {
    const entry = r.entryText;
    buf[at++] = 0x0a;
    let v = entry.length;
    while (v >= 0x80) {
      buf[at++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[at++] = v;
    at += buf.write(entry, at, 'latin1');
  }
  h.update(buf.subarray(0, at));
}

const isOpen = (r: Record) => r.status === InferenceStatus.Pending || r.status === InferenceStatus.Started;

/**
 * Pending/Started records per chunk. Chunks are frozen and never change, so a count is computed
 * once per chunk and stays right for every version sharing it; a chunk that goes away takes its
 * entry with it.
 */
const openCounts = new WeakMap<Chunk, number>();

function openCount(chunk: Chunk): number {
  let n = openCounts.get(chunk);
  if (n === undefined) {
    n = 0;
    for (const r of chunk) if (isOpen(r)) n++;
    openCounts.set(chunk, n);
  }
  return n;
}

export class LiveRecords implements ReadonlyMap<bigint, Record> {
  static readonly EMPTY = new LiveRecords([], [], 0, 0);

  readonly #chunks: readonly Chunk[];
  /**
   * SHA-256 state after chunks 0..i, valid for this version below `#midstatesValid` (where set).
   * The array may be shared with the version this one was made from: it is never written once
   * handed out, so `with` passes it on with a shorter valid prefix instead of copying it, and
   * liveHash builds a new one. A diff of three txs thus copies it once, not three times (each copy
   * is n/32 entries: ~620 at 19,800 live records).
   */
  #midstates: readonly (Hash | undefined)[];
  #midstatesValid: number;
  readonly #size: number;
  #liveHash: Uint8Array | undefined;

  private constructor(
    chunks: readonly Chunk[],
    midstates: readonly (Hash | undefined)[],
    midstatesValid: number,
    size: number,
  ) {
    this.#chunks = chunks;
    this.#midstates = midstates;
    this.#midstatesValid = midstatesValid;
    this.#size = size;
  }

  /** Any map of live records (e.g. decoded from a snapshot), keyed by their ids. */
  static from(records: Iterable<InferenceRecord>): LiveRecords {
    const sorted = Array.from(records, asRecord).sort((a, b) => compareKeys(keyOf(a), keyOf(b)));
    for (let i = 1; i < sorted.length; i++) {
      if (keyOf(sorted[i - 1]!) === keyOf(sorted[i]!))
        throw new RangeError(`duplicate live record ${sorted[i]!.id}`);
    }
    const chunks: Chunk[] = [];
    for (let i = 0; i < sorted.length; i += CHUNK) chunks.push(Object.freeze(sorted.slice(i, i + CHUNK)));
    return new LiveRecords(chunks, [], 0, sorted.length);
  }

  get size(): number {
    return this.#size;
  }

  /** Chunk index holding `id` or where it would go (the last chunk whose first id ≤ id). */
  #chunkOf(key: StoredInt): number {
    const chunks = this.#chunks;
    let lo = 0;
    let hi = chunks.length - 1;
    // Most lookups are recent ids: try the last chunk first.
    if (hi >= 0 && keyOf(chunks[hi]![0]!) <= key) return hi;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (keyOf(chunks[mid]![0]!) <= key) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  get(id: bigint): Record | undefined {
    if (this.#size === 0) return undefined;
    const key = storedInt(id);
    const chunk = this.#chunks[this.#chunkOf(key)]!;
    const r = chunk[lowerBound(chunk, key)];
    return r !== undefined && keyOf(r) === key ? r : undefined;
  }

  has(id: bigint): boolean {
    return this.get(id) !== undefined;
  }

  /** This map with `record` added or replaced (by id); `this` is unchanged. */
  with(added: InferenceRecord): LiveRecords {
    const record = asRecord(added);
    const chunks = this.#chunks;
    if (chunks.length === 0) return new LiveRecords([Object.freeze([record])], [], 0, 1);
    const key = keyOf(record);
    const c = this.#chunkOf(key);
    const chunk = chunks[c]!;
    const at = lowerBound(chunk, key);
    const replaces = at < chunk.length && keyOf(chunk[at]!) === key;
    const next = chunks.slice();
    if (replaces) {
      const copy = chunk.slice();
      copy[at] = record;
      next[c] = Object.freeze(copy);
    } else if (at === chunk.length && c === chunks.length - 1 && chunk.length >= CHUNK) {
      next.push(Object.freeze([record]));
    } else {
      const copy = [...chunk.slice(0, at), record, ...chunk.slice(at)];
      if (copy.length > 2 * CHUNK) {
        next.splice(c, 1, Object.freeze(copy.slice(0, CHUNK)), Object.freeze(copy.slice(CHUNK)));
      } else {
        next[c] = Object.freeze(copy);
      }
    }
    return new LiveRecords(
      next,
      this.#midstates,
      Math.min(this.#midstatesValid, c),
      this.#size + (replaces ? 0 : 1),
    );
  }

  /** This map without the given ids (absent ones ignored); `this` is unchanged. */
  without(ids: Iterable<bigint>): LiveRecords {
    const drop = new Set<StoredInt>();
    for (const id of ids) drop.add(storedInt(id));
    if (drop.size === 0) return this;
    const next: Chunk[] = [];
    let firstChanged = -1;
    let size = 0;
    this.#chunks.forEach((chunk, i) => {
      const kept = chunk.some((r) => drop.has(keyOf(r))) ? chunk.filter((r) => !drop.has(keyOf(r))) : chunk;
      if (kept !== chunk && firstChanged < 0) firstChanged = i;
      size += kept.length;
      if (kept.length > 0) next.push(kept === chunk ? chunk : Object.freeze(kept));
    });
    if (firstChanged < 0) return this;
    // Sealing leaves holes: repack once chunks run at under half their capacity on average.
    if (next.length > 2 * Math.ceil(size / CHUNK) + 1) return LiveRecords.from(this.#valuesOf(next));
    return new LiveRecords(next, this.#midstates, Math.min(this.#midstatesValid, firstChanged), size);
  }

  *#valuesOf(chunks: readonly Chunk[]): IterableIterator<Record> {
    for (const chunk of chunks) yield* chunk;
  }

  /** Live records in ascending id. */
  ascending(): Record[] {
    return this.#chunks.flat();
  }

  /**
   * The Pending and Started records in ascending id. Only chunks holding one are read: nearly every
   * live record is past Started, so the periodic §7.4 timeout pass reads a few chunks, not every
   * record (all 19,800 at nonce 19,800 with every record live).
   */
  openRecords(): Record[] {
    const out: Record[] = [];
    for (const chunk of this.#chunks) {
      if (openCount(chunk) === 0) continue;
      for (const r of chunk) if (isOpen(r)) out.push(r);
    }
    return out;
  }

  /**
   * Calls `visit` on the records in ascending id until it returns false. A loop over the chunks,
   * not a generator: a scan of every live record (sealing's, §5.6) pays a call per record, not a
   * generator step (~10× the cost at 19,800 records).
   */
  scanAscending(visit: (r: Record) => boolean): void {
    for (const chunk of this.#chunks) {
      for (const r of chunk) if (!visit(r)) return;
    }
  }

  /** The last `n` records in ascending id. */
  newest(n: number): Record[] {
    const out: Record[] = [];
    for (let c = this.#chunks.length - 1; c >= 0 && out.length < n; c--) {
      const chunk = this.#chunks[c]!;
      for (let i = chunk.length - 1; i >= 0 && out.length < n; i--) out.push(chunk[i]!);
    }
    return out.reverse();
  }

  /** live_hash (§6): H(InferencesMapProto of the live records, ascending id); H("") when empty. */
  liveHash(): Uint8Array {
    if (this.#liveHash) return this.#liveHash;
    const chunks = this.#chunks;
    const shared = this.#midstates;
    // Midstates are valid for a prefix only; find its end.
    let from = 0;
    const valid = Math.min(this.#midstatesValid, chunks.length - 1);
    while (from < valid && shared[from] !== undefined) from++;
    const h = from === 0 ? createHash('sha256') : shared[from - 1]!.copy();
    // A new array: the shared one may be the valid prefix of other versions too.
    const mids = shared.slice(0, from);
    for (let i = from; i < chunks.length; i++) {
      hashChunk(h, chunks[i]!);
      // The last chunk changes on every Start; a midstate after it would rarely be reused.
      if (i < chunks.length - 1) mids.push(h.copy());
    }
    this.#midstates = mids;
    this.#midstatesValid = mids.length;
    // A digest Buffer owns its 32-byte ArrayBuffer (never the pool): a view of it, not a copy.
    const digest = h.digest();
    this.#liveHash = new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength);
    return this.#liveHash;
  }

  *values(): MapIterator<Record> {
    for (const chunk of this.#chunks) yield* chunk;
  }

  *keys(): MapIterator<bigint> {
    for (const chunk of this.#chunks) for (const r of chunk) yield r.id;
  }

  *entries(): MapIterator<[bigint, Record]> {
    for (const chunk of this.#chunks) for (const r of chunk) yield [r.id, r];
  }

  [Symbol.iterator](): MapIterator<[bigint, Record]> {
    return this.entries();
  }

  forEach(fn: (value: Record, key: bigint, map: ReadonlyMap<bigint, Record>) => void): void {
    for (const chunk of this.#chunks) for (const r of chunk) fn(r, r.id, this);
  }

  get [Symbol.toStringTag](): string {
    return 'LiveRecords';
  }
}

/** The Pending and Started records of a live map in ascending id (LiveRecords.openRecords). */
export function openRecordsOf(inferences: ReadonlyMap<bigint, InferenceRecord>): InferenceRecord[] {
  if (inferences instanceof LiveRecords) return inferences.openRecords();
  return [...inferences.values()]
    .filter((r) => r.status === InferenceStatus.Pending || r.status === InferenceStatus.Started)
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * The state's live map as LiveRecords: itself, or (for a plain Map, e.g. built by a test or a
 * snapshot decoder) an equivalent LiveRecords, O(n) once: withRoot stores the result in the state.
 */
export function liveRecordsOf(inferences: ReadonlyMap<bigint, InferenceRecord>): LiveRecords {
  if (inferences instanceof LiveRecords) return inferences;
  for (const [id, r] of inferences) {
    if (r.id !== id) throw new RangeError(`live record ${r.id} stored under ${id}`);
  }
  return LiveRecords.from(inferences.values());
}
