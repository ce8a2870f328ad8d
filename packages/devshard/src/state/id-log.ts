// An append-only, persistent set of ascending ids (every inference id ever started). Ids equal the
// nonce of their diff, so they arrive in ascending order, nearly always one after another: the set
// is kept as runs of consecutive ids [first, last], so a session's memory does not grow by an id per
// nonce, only by a run per gap (a diff without a Start: a flush, a timeout). The open run grows in
// place of a new value; a gap closes it into the closed runs, whose full chunks are shared between
// versions (a gap copies at most one chunk) and packed as u64 pairs (16 bytes a run, where a bigint
// array takes ~64), so even a gap every other nonce up to max_nonce 1,000,000 stays ~8 MB. A
// membership test is a binary search over runs.

/** Closed runs per chunk (each run is two entries, first and last). */
const CHUNK_RUNS = 512;

type Runs = ArrayLike<bigint>;

export interface IdLog {
  /** Full chunks of closed runs, flat `[first, last, first, last, …]`, ascending; never written. */
  readonly chunks: readonly Runs[];
  /** Closed runs after the full chunks (fewer than CHUNK_RUNS), same layout. */
  readonly tail: readonly bigint[];
  /** The open (last) run; both undefined when the log is empty. */
  readonly first: bigint | undefined;
  readonly last: bigint | undefined;
  /** Number of ids. */
  readonly size: number;
}

export const EMPTY_ID_LOG: IdLog = Object.freeze({
  chunks: Object.freeze([]),
  tail: Object.freeze([]),
  first: undefined,
  last: undefined,
  size: 0,
});

export function idLogLast(log: IdLog): bigint | undefined {
  return log.last;
}

const U64_MAX = 0xffff_ffff_ffff_ffffn;

/** A full chunk as u64 pairs (ids are u64 on the wire; a larger one keeps the bigint array). */
function packed(runs: readonly bigint[]): Runs {
  return runs[runs.length - 1]! <= U64_MAX ? BigUint64Array.from(runs) : Object.freeze([...runs]);
}

/** Appends `id`, which must exceed every id already present. */
export function idLogAppend(log: IdLog, id: bigint): IdLog {
  const { first, last } = log;
  if (last !== undefined && id <= last) throw new RangeError('ids must be appended in ascending order');
  if (first === undefined || last === undefined)
    return Object.freeze({ ...log, first: id, last: id, size: 1 });
  if (id === last + 1n) return Object.freeze({ ...log, last: id, size: log.size + 1 });
  // A gap: the open run is closed.
  const full = log.tail.length >= 2 * CHUNK_RUNS;
  return Object.freeze({
    chunks: full ? Object.freeze([...log.chunks, packed(log.tail)]) : log.chunks,
    tail: Object.freeze(full ? [first, last] : [...log.tail, first, last]),
    first: id,
    last: id,
    size: log.size + 1,
  });
}

/** Whether a flat run list (ascending) holds `id`. */
function runsHave(runs: Runs, id: bigint): boolean {
  let lo = 0;
  let hi = runs.length / 2 - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (id < runs[2 * mid]!) hi = mid - 1;
    else if (id > runs[2 * mid + 1]!) lo = mid + 1;
    else return true;
  }
  return false;
}

export function idLogHas(log: IdLog, id: bigint): boolean {
  if (log.first !== undefined && id >= log.first) return id <= log.last!;
  const tailFirst = log.tail[0];
  if (tailFirst !== undefined && id >= tailFirst) return runsHave(log.tail, id);
  let lo = 0;
  let hi = log.chunks.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const chunk = log.chunks[mid]!;
    if (id < chunk[0]!) hi = mid - 1;
    else if (id > chunk[chunk.length - 1]!) lo = mid + 1;
    else return runsHave(chunk, id);
  }
  return false;
}

/**
 * The log that appending `ids` (strictly ascending) one by one would build, in one pass: appending
 * copies the closed-run tail at every gap, which for 20,000 ids with gaps is ~10 M element copies.
 */
export function idLogOfAscending(ids: Iterable<bigint>): IdLog {
  const runs: bigint[] = [];
  let first: bigint | undefined;
  let last: bigint | undefined;
  let size = 0;
  for (const id of ids) {
    if (last !== undefined && id <= last) throw new RangeError('ids must be appended in ascending order');
    if (first === undefined || last === undefined) first = id;
    else if (id !== last + 1n) {
      runs.push(first, last);
      first = id;
    }
    last = id;
    size++;
  }
  return laidOut(runs, first, last, size);
}

/**
 * The log of the runs `[first, last, first, last, …]` (ascending, each first ≤ last; a run that
 * starts right after the previous one continues it), as the snapshot stores them: no array of every
 * id. Throws RangeError on runs out of order.
 */
export function idLogOfRuns(flat: readonly bigint[]): IdLog {
  if (flat.length % 2 !== 0) throw new RangeError('runs come in pairs');
  const runs: bigint[] = [];
  let first: bigint | undefined;
  let last: bigint | undefined;
  let size = 0;
  for (let i = 0; i < flat.length; i += 2) {
    const a = flat[i]!;
    const b = flat[i + 1]!;
    if (b < a || (last !== undefined && a <= last))
      throw new RangeError('ids must be appended in ascending order');
    if (first === undefined || last === undefined) first = a;
    else if (a !== last + 1n) {
      runs.push(first, last);
      first = a;
    }
    last = b;
    size += Number(b - a) + 1;
  }
  if (size === 0) return EMPTY_ID_LOG;
  return laidOut(runs, first, last, size);
}

/**
 * As appending lays closed runs out: full chunks, then a tail of 1..CHUNK_RUNS runs (a full tail
 * moves into the chunks only when the next run closes).
 */
function laidOut(runs: bigint[], first: bigint | undefined, last: bigint | undefined, size: number): IdLog {
  if (size === 0) return EMPTY_ID_LOG;
  const full = runs.length === 0 ? 0 : Math.floor((runs.length / 2 - 1) / CHUNK_RUNS);
  const chunks: Runs[] = [];
  for (let c = 0; c < full; c++)
    chunks.push(packed(runs.slice(c * 2 * CHUNK_RUNS, (c + 1) * 2 * CHUNK_RUNS)));
  return Object.freeze({
    chunks: Object.freeze(chunks),
    tail: Object.freeze(runs.slice(full * 2 * CHUNK_RUNS)),
    first,
    last,
    size,
  });
}

export function idLogFrom(ids: Iterable<bigint>): IdLog {
  return idLogOfAscending([...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
}

export function idLogToArray(log: IdLog): bigint[] {
  const out: bigint[] = [];
  const expand = (runs: Runs) => {
    for (let i = 0; i < runs.length; i += 2) for (let id = runs[i]!; id <= runs[i + 1]!; id++) out.push(id);
  };
  for (const chunk of log.chunks) expand(chunk);
  expand(log.tail);
  if (log.first !== undefined) for (let id = log.first; id <= log.last!; id++) out.push(id);
  return out;
}

/** Number of runs of consecutive ids. */
export function idLogRunCount(log: IdLog): number {
  let n = log.tail.length / 2 + (log.first === undefined ? 0 : 1);
  for (const chunk of log.chunks) n += chunk.length / 2;
  return n;
}

/** Calls `fn(first, last)` for every run of consecutive ids, ascending (no array of every id). */
export function idLogForEachRun(log: IdLog, fn: (first: bigint, last: bigint) => void): void {
  const each = (runs: Runs) => {
    for (let i = 0; i < runs.length; i += 2) fn(runs[i]!, runs[i + 1]!);
  };
  for (const chunk of log.chunks) each(chunk);
  each(log.tail);
  if (log.first !== undefined) fn(log.first, log.last!);
}
