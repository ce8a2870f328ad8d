// An append-only, persistent set of ascending ids (every inference id ever started). Ids equal the
// nonce of their diff, so they arrive in ascending order and a membership test is a binary search.
// Full chunks are shared between versions; an append copies at most one chunk.

const CHUNK = 1024;

export interface IdLog {
  readonly chunks: readonly (readonly bigint[])[];
  readonly tail: readonly bigint[];
}

export const EMPTY_ID_LOG: IdLog = Object.freeze({ chunks: Object.freeze([]), tail: Object.freeze([]) });

export function idLogLast(log: IdLog): bigint | undefined {
  if (log.tail.length > 0) return log.tail[log.tail.length - 1];
  const last = log.chunks[log.chunks.length - 1];
  return last?.[last.length - 1];
}

/** Appends `id`, which must exceed every id already present. */
export function idLogAppend(log: IdLog, id: bigint): IdLog {
  const last = idLogLast(log);
  if (last !== undefined && id <= last) throw new RangeError('ids must be appended in ascending order');
  if (log.tail.length < CHUNK) return { chunks: log.chunks, tail: Object.freeze([...log.tail, id]) };
  return { chunks: Object.freeze([...log.chunks, log.tail]), tail: Object.freeze([id]) };
}

function contains(sorted: readonly bigint[], id: bigint): boolean {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const v = sorted[mid]!;
    if (v === id) return true;
    if (v < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

export function idLogHas(log: IdLog, id: bigint): boolean {
  const tailFirst = log.tail[0];
  if (tailFirst !== undefined && id >= tailFirst) return contains(log.tail, id);
  let lo = 0;
  let hi = log.chunks.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const chunk = log.chunks[mid]!;
    if (id < chunk[0]!) hi = mid - 1;
    else if (id > chunk[chunk.length - 1]!) lo = mid + 1;
    else return contains(chunk, id);
  }
  return false;
}

export function idLogFrom(ids: Iterable<bigint>): IdLog {
  let log = EMPTY_ID_LOG;
  for (const id of [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) log = idLogAppend(log, id);
  return log;
}

export function idLogToArray(log: IdLog): bigint[] {
  return [...log.chunks.flat(), ...log.tail];
}
