// Property: the persistent live map (state/live-records.ts) behaves as a plain Map of the same
// records, its incremental live_hash equals the from-scratch hash of §6 (liveRecordsHash over the
// entries in ascending id) after any sequence of updates, appends, inserts and removals, and every
// earlier version keeps its records and its hash while later versions are derived from it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { liveRecordsHash } from '../hash/rest-hash.js';
import { LiveRecords, liveRecordsOf, openRecordsOf } from './live-records.js';
import { makeRecord, updateRecord } from './record.js';
import { type InferenceRecord, InferenceStatus } from './types.js';

function record(id: bigint, version: number): InferenceRecord {
  return makeRecord({
    id,
    status: InferenceStatus.Pending,
    executorSlot: Number(id % 16n),
    model: `model-${version % 7}`,
    promptHash: new Uint8Array(32).fill(version & 0xff),
    responseHash: new Uint8Array(version % 3 === 0 ? 0 : 32).fill(1),
    inputLength: BigInt(version),
    maxTokens: 100n,
    inputTokens: 0n,
    outputTokens: BigInt(version % 5),
    reservedCost: BigInt(version) * 1_000n,
    actualCost: 0n,
    startedAt: 1_700_000_000n + id,
    confirmedAt: 0n,
    votesValid: 0,
    votesInvalid: 0,
    validatedBy: 0n,
    startedAtHeight: 0n,
    confirmedAtHeight: 0n,
  });
}

function referenceHash(m: ReadonlyMap<bigint, InferenceRecord>): string {
  const sorted = [...m.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return Buffer.from(liveRecordsHash(sorted.map((r) => r.entry))).toString('hex');
}

function hex(b: Uint8Array): string {
  return Buffer.from(b).toString('hex');
}

interface Version {
  readonly live: LiveRecords;
  readonly reference: Map<bigint, InferenceRecord>;
  readonly hash: string;
  readonly top: bigint;
}

function check(v: Version): void {
  expect(v.live.size).toBe(v.reference.size);
  expect([...v.live.keys()]).toEqual([...v.reference.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
  for (const [id, r] of v.reference) expect(v.live.get(id)).toBe(r);
  expect(hex(v.live.liveHash())).toBe(v.hash);
}

const op = fc.record({
  kind: fc.constantFrom('append', 'append', 'append', 'update', 'update', 'insert', 'seal', 'branch'),
  pick: fc.nat({ max: 1_000_000 }),
  count: fc.integer({ min: 1, max: 80 }),
});

describe('LiveRecords', () => {
  it('matches a Map and the from-scratch live_hash, and never changes an earlier version', () => {
    fc.assert(
      fc.property(
        fc.array(op, { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 0, max: 300 }),
        (ops, initial) => {
          const startRecords = Array.from({ length: initial }, (_, i) => record(BigInt(2 * i + 1), i));
          const reference0 = new Map(startRecords.map((r) => [r.id, r]));
          let v: Version = {
            live: LiveRecords.from(startRecords),
            reference: reference0,
            hash: referenceHash(reference0),
            top: BigInt(2 * initial + 1),
          };
          const history: Version[] = [v];
          let n = 0;
          for (const o of ops) {
            // Hash some versions only, so midstates are inherited across unhashed versions too.
            if (o.pick % 3 === 0) v.live.liveHash();
            const ids = [...v.reference.keys()];
            const reference = new Map(v.reference);
            let live = v.live;
            let top = v.top;
            switch (o.kind) {
              case 'append':
                for (let i = 0; i < o.count; i++) {
                  top += 2n;
                  const r = record(top, ++n);
                  live = live.with(r);
                  reference.set(r.id, r);
                }
                break;
              case 'update':
                for (let i = 0; i < Math.min(o.count, 5) && ids.length > 0; i++) {
                  // Mostly recent ids, sometimes any.
                  const at =
                    o.pick % 2 === 0 ? ids.length - 1 - ((o.pick + i) % 40) : (o.pick * (i + 1)) % ids.length;
                  const id = ids[Math.max(0, at)]!;
                  const r = record(id, ++n);
                  live = live.with(r);
                  reference.set(id, r);
                }
                break;
              case 'insert': {
                // An id between existing ones (even ids are never used by appends).
                const id = BigInt(2 * (o.pick % Number(top / 2n + 1n)));
                if (id > 0n && !reference.has(id)) {
                  const r = record(id, ++n);
                  live = live.with(r);
                  reference.set(id, r);
                }
                break;
              }
              case 'seal': {
                // Sealing takes old records, with holes (some stay live).
                const drop = ids
                  .sort((a, b) => (a < b ? -1 : 1))
                  .slice(0, o.count * 3)
                  .filter((_, i) => (i + o.pick) % 4 !== 0);
                live = live.without(drop);
                for (const id of drop) reference.delete(id);
                break;
              }
              case 'branch':
                // Continue from an earlier version (a composition that was never persisted).
                v = history[o.pick % history.length]!;
                continue;
            }
            v = { live, reference, hash: referenceHash(reference), top };
            history.push(v);
            check(v);
          }
          for (const old of history) check(old);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('is built from a plain Map (a test or snapshot decoder) with the same hash', () => {
    const records = Array.from({ length: 100 }, (_, i) => record(BigInt(100 - i), i));
    const map = new Map(records.map((r) => [r.id, r]));
    expect(hex(liveRecordsOf(map).liveHash())).toBe(referenceHash(map));
    expect(hex(LiveRecords.EMPTY.liveHash())).toBe(referenceHash(new Map()));
    expect(() => liveRecordsOf(new Map([[1n, record(2n, 0)]]))).toThrow(RangeError);
  });

  it('lists the Pending and Started records of every version, as a filter of all of them would', () => {
    const statuses = Object.values(InferenceStatus);
    const withStatus = (id: bigint, status: number) =>
      updateRecord(record(id, Number(id)), { status: status as InferenceRecord['status'] });
    const open = (m: ReadonlyMap<bigint, InferenceRecord>) =>
      [...m.values()].filter(
        (r) => r.status === InferenceStatus.Pending || r.status === InferenceStatus.Started,
      );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 1, max: 300 }), fc.constantFrom(...statuses)), {
          minLength: 1,
          maxLength: 400,
        }),
        (changes) => {
          const versions: LiveRecords[] = [];
          let live = LiveRecords.EMPTY;
          for (const [id, status] of changes) {
            live = live.with(withStatus(BigInt(id), status));
            versions.push(live);
            // Every few changes: a removal, and a version whose counts are read before it changes.
            if (id % 7 === 0) live = live.without([BigInt(id - 1)]);
            if (id % 3 === 0) live.openRecords();
          }
          for (const v of versions) expect(v.openRecords()).toEqual(open(v));
          expect(openRecordsOf(new Map([...live].reverse()))).toEqual(open(live));
        },
      ),
      { numRuns: 60 },
    );
  });
});
