import { sha256 } from '@gonka-gateway/chain';
import { describe, expect, it } from 'vitest';
import { SessionPhase } from '../hash/root-formula.js';
import type { EncodedTx } from '../proto/devshard-tx.js';
import { txOf } from '../proto/tx-builders.js';
import { TimeoutReason } from '../proto/tx-messages.js';
import { run } from '../testing/drive.js';
import {
  confirmTx,
  finishTx,
  keyN,
  makeFixture,
  startTx,
  timeoutTx,
  validationTx,
  voteTx,
} from '../testing/session-fixture.js';
import { EMPTY_ID_LOG, idLogAppend, idLogFrom, idLogHas, idLogToArray } from './id-log.js';
import { makeRecord } from './record.js';
import { withRoot } from './root.js';
import {
  decodeStateSnapshot,
  encodeStateSnapshot,
  encodeStateSnapshotSteps,
  SNAPSHOT_FORMAT_VERSION,
  SNAPSHOT_RECORDS_PER_STEP,
} from './snapshot.js';
import { type InferenceRecord, InferenceStatus, type SessionState } from './types.js';

const warm = keyN(77);
const ctx = { isWarmKey: (_cold: string, signer: string) => signer === warm.address };

/** A v5 session through every record status, sealing, a warm key, validations, and Settlement. */
function session() {
  const f = makeFixture({ tag: 'v5', config: { sealGraceNonces: 3n, autoSealEveryNNonces: 2n } });
  const late = { confirmedAt: 9_000n };
  const steps: EncodedTx[][] = [
    [startTx(1n)],
    [confirmTx(f, 1n, { signer: warm }), startTx(2n)], // binds a warm key to slot 1
    [finishTx(f, 1n), startTx(3n)],
    [startTx(4n), timeoutTx(f, 2n, TimeoutReason.Refused)],
    [confirmTx(f, 3n), startTx(5n), validationTx(f, 1n, 2, false)], // 1 Challenged
    [voteTx(f, 1n, 3, false), voteTx(f, 1n, 4, true), startTx(6n)],
    [confirmTx(f, 4n, late), finishTx(f, 3n), startTx(7n)],
    [finishTx(f, 4n), confirmTx(f, 5n, late), startTx(8n)],
    [timeoutTx(f, 5n, TimeoutReason.Execution), startTx(9n)],
    [confirmTx(f, 6n, late), startTx(10n)],
    [txOf.finalizeRound(), confirmTx(f, 7n, late)],
    [finishTx(f, 6n)],
    [],
    [],
    [],
    [],
    [],
  ];
  const states: SessionState[] = [f.state];
  for (const step of steps) states.push(run(f, [step], ctx, states.at(-1)));
  return { f, steps, states };
}

describe('replica snapshots', () => {
  const { f, steps, states } = session();

  it('covers every kind of record state the test means to cover', () => {
    const statuses = new Set(states.flatMap((s) => [...s.inferences.values()].map((r) => r.status)));
    for (const st of [
      InferenceStatus.Pending,
      InferenceStatus.Started,
      InferenceStatus.Finished,
      InferenceStatus.Challenged,
      InferenceStatus.TimedOut,
    ]) {
      expect(statuses).toContain(st);
    }
    expect(states.some((s) => s.sealedAcc.some((b) => b !== 0))).toBe(true);
    expect(states.some((s) => s.warmKeys.size > 0)).toBe(true);
    expect(states.some((s) => s.phase === SessionPhase.Finalizing)).toBe(true);
    expect(states.at(-1)!.phase).toBe(SessionPhase.Settlement);
  });

  it('decodes every state of the session to an equal state, and the session continues from it', () => {
    for (let i = 0; i < states.length; i++) {
      const bytes = encodeStateSnapshot(states[i]!);
      expect(bytes[0]).toBe(SNAPSHOT_FORMAT_VERSION);
      const decoded = decodeStateSnapshot(bytes);
      expect(decoded).toEqual(states[i]);
      // Continuing from the decoded state gives the same roots as continuing from the original.
      if (i < steps.length) {
        expect(run(f, steps.slice(i), ctx, decoded).root).toEqual(states.at(-1)!.root);
      }
    }
  });

  it('refuses a tampered snapshot, also when the checksum is fixed up', () => {
    const s = states[8]!;
    const bytes = encodeStateSnapshot(s);
    const flipped = bytes.slice();
    flipped[40] = flipped[40]! ^ 1;
    expect(() => decodeStateSnapshot(flipped)).toThrow(/checksum/);

    // A change of the balance with a valid checksum: the recomputed root no longer matches.
    const other = encodeStateSnapshot({ ...s, balance: s.balance + 1n });
    const forged = other.slice();
    forged.set(s.root, forged.length - 64); // claim the honest root
    forged.set(sha256(forged.subarray(0, forged.length - 32)), forged.length - 32);
    expect(() => decodeStateSnapshot(forged)).toThrow(/recomputed root differs/);

    const future = bytes.slice();
    future[0] = SNAPSHOT_FORMAT_VERSION + 1;
    expect(() => decodeStateSnapshot(future)).toThrow(/format version/);
    expect(() => decodeStateSnapshot(bytes.subarray(0, 50))).toThrow();
  });
});

describe('started ids in snapshots', () => {
  it('decode to the same id log that appending builds, across chunk boundaries', () => {
    const { states } = session();
    const s = states.at(-1)!;
    // Every id a gap apart: a run each; chunks of closed runs turn over at 512, 1,024, … runs.
    for (const n of [1, 2, 512, 513, 514, 1023, 1024, 1025, 1026, 1027, 2048, 2049, 5000]) {
      let log = EMPTY_ID_LOG;
      for (let i = 1; i <= n; i++) log = idLogAppend(log, BigInt(i * 3));
      const decoded = decodeStateSnapshot(
        encodeStateSnapshot({ ...s, startedIds: log, latestNonce: BigInt(n * 3) }),
      ).startedIds;
      expect(decoded).toEqual(log);
      expect(idLogHas(decoded, BigInt(n * 3))).toBe(true);
      expect(idLogHas(decoded, 2n)).toBe(false);
    }
  });
});

describe('snapshot encoding in steps', () => {
  it('yields every SNAPSHOT_RECORDS_PER_STEP live records and gives the same bytes', () => {
    const base = makeFixture({ tag: 'v5' }).state;
    const inferences = new Map<bigint, InferenceRecord>();
    for (let i = 1; i <= 2_500; i++) {
      const id = BigInt(i);
      const r = makeRecord({
        id,
        status: InferenceStatus.Finished,
        executorSlot: i % 5,
        model: 'llama',
        promptHash: new Uint8Array(32).fill(1),
        responseHash: new Uint8Array(32).fill(2),
        inputLength: 100n,
        maxTokens: 100n,
        inputTokens: 100n,
        outputTokens: 60n,
        reservedCost: 200n,
        actualCost: 160n,
        startedAt: 1_000n + id,
        confirmedAt: 1_001n + id,
        votesValid: 0,
        votesInvalid: 0,
        validatedBy: 0n,
        startedAtHeight: 0n,
        confirmedAtHeight: 0n,
      });
      inferences.set(id, r);
    }
    const { root: _r, liveHash: _l, ...working } = base;
    const s = withRoot({
      ...working,
      inferences,
      startedIds: idLogFrom(inferences.keys()),
      latestNonce: 2_500n,
    });
    const steps = encodeStateSnapshotSteps(s);
    let yields = 0;
    let next = steps.next();
    while (!next.done) {
      yields++;
      next = steps.next();
    }
    expect(yields).toBe(Math.floor(2_500 / SNAPSHOT_RECORDS_PER_STEP));
    expect(next.value).toEqual(encodeStateSnapshot(s));
    expect(decodeStateSnapshot(next.value)).toEqual(s);
  });

  const hexBytes = (hex: string) => new Uint8Array(Buffer.from(hex, 'hex'));

  it('still reads a snapshot of format 1 (a delta per started id), and writes runs', () => {
    // Written by format 1: nonce 12, 4 slots, no live record, started ids 1–3, 5–6, 9–11.
    const v1 = hexBytes(
      '010237370276352c676f6e6b61317a79636b38757930786b72636a32656d64686d616772366533777172777675776c786438676801904ee80702e807140196013c800f40042c676f6e6b613177353038643671656a7874646734793572337a6172766172793063357877376b3267737967362c676f6e6b613171366861673637646c3533776c3939767a6734327a3865797a667a32786c6b76716b707a33772c676f6e6b61313068743974796b7334766837703570393034743334306372396e7661687937756876717470382c676f6e6b613163736838613766306d64737234377a7936706a30347476346d7764756d6c66616b7370337975f0c5eadc03904e00000c000801010102010301010400000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000073bbbb969e674397d09207014b759685953b0d4a12b60b165c57391723e01ee906149387c7389844741747576783413c7456e4f29922c78d44c1172f7fc667e6',
    );
    const state = decodeStateSnapshot(v1);
    expect(state.latestNonce).toBe(12n);
    expect(idLogToArray(state.startedIds)).toEqual([1n, 2n, 3n, 5n, 6n, 9n, 10n, 11n]);
    expect(Buffer.from(state.root).toString('hex')).toBe(
      '73bbbb969e674397d09207014b759685953b0d4a12b60b165c57391723e01ee9',
    );
    const again = encodeStateSnapshot(state);
    expect(again[0]).toBe(SNAPSHOT_FORMAT_VERSION);
    expect(again.length).toBeLessThan(v1.length);
    expect(decodeStateSnapshot(again)).toEqual(state);
  });
});
