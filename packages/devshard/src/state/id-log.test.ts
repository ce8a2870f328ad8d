// The started-id log (id-log.ts) as runs of consecutive ids: built by appends or in one pass, it
// holds exactly the ids given, and every earlier version keeps its ids while later ones append.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  EMPTY_ID_LOG,
  type IdLog,
  idLogAppend,
  idLogForEachRun,
  idLogFrom,
  idLogHas,
  idLogOfAscending,
  idLogToArray,
} from './id-log.js';

/** Strictly ascending ids: mostly consecutive, with gaps of 1–3 and some far jumps (> 2^53 too). */
const ascendingIds = fc
  .array(
    fc.oneof(
      fc.constant(1n),
      fc.constant(1n),
      fc.constant(1n),
      fc.bigInt({ min: 2n, max: 4n }),
      fc.bigInt({ min: 5n, max: 2n ** 60n }),
    ),
    {
      maxLength: 3_000,
      size: 'max',
    },
  )
  .map((steps) => {
    let id = 0n;
    return steps.map((step) => (id += step));
  });

function checkHolds(log: IdLog, ids: readonly bigint[]): void {
  expect(idLogToArray(log)).toEqual(ids);
  expect(log.size).toBe(ids.length);
  // The runs (what a snapshot writes) expand to the same ids, each run maximal.
  const expanded: bigint[] = [];
  let lastOfRun: bigint | undefined;
  idLogForEachRun(log, (first, last) => {
    expect(first <= last && (lastOfRun === undefined || first > lastOfRun + 1n)).toBe(true);
    for (let id = first; id <= last; id++) expanded.push(id);
    lastOfRun = last;
  });
  expect(expanded).toEqual(ids);
  const set = new Set(ids);
  for (const id of ids) {
    expect(idLogHas(log, id)).toBe(true);
    if (!set.has(id + 1n)) expect(idLogHas(log, id + 1n)).toBe(false);
    if (!set.has(id - 1n)) expect(idLogHas(log, id - 1n)).toBe(false);
  }
  expect(idLogHas(log, 0n)).toBe(false);
}

describe('IdLog', () => {
  it('holds exactly the ids appended, in every version, and the one-pass build agrees', () => {
    fc.assert(
      fc.property(ascendingIds, (ids) => {
        const versions: IdLog[] = [EMPTY_ID_LOG];
        for (const id of ids) versions.push(idLogAppend(versions[versions.length - 1]!, id));
        checkHolds(versions[ids.length]!, ids);
        checkHolds(idLogOfAscending(ids), ids);
        // Laid out as appending lays it out (a snapshot decodes to an equal log).
        expect(idLogOfAscending(ids)).toEqual(versions[ids.length]);
        checkHolds(idLogFrom([...ids].reverse()), ids);
        // An earlier version is unchanged by later appends.
        const half = Math.floor(ids.length / 2);
        expect(idLogToArray(versions[half]!)).toEqual(ids.slice(0, half));
      }),
      { numRuns: 30 },
    );
  });

  it('refuses an id that does not exceed the last one', () => {
    const log = idLogOfAscending([1n, 2n, 5n]);
    expect(() => idLogAppend(log, 5n)).toThrow(RangeError);
    expect(() => idLogAppend(log, 3n)).toThrow(RangeError);
    expect(() => idLogOfAscending([1n, 3n, 3n])).toThrow(RangeError);
  });

  it('keeps a run of consecutive ids as one run, whatever its length', () => {
    const ids = Array.from({ length: 20_000 }, (_, i) => BigInt(i + 1));
    const log = idLogOfAscending(ids);
    expect(log.chunks.length + log.tail.length).toBe(0);
    expect([log.first, log.last, log.size]).toEqual([1n, 20_000n, 20_000]);
  });
});
