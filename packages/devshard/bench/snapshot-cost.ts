// Time to encode a replica snapshot with many live records (docs/performance.md); a measurement,
// not a test. A session encodes one every snapshotEvery diffs on its own thread
// (session/snapshots.ts), so with every record live this is work per request that grows with the
// live set.
//   node --conditions=source --import tsx packages/devshard/bench/snapshot-cost.ts [records] [runs]
// The records are Finished ones like a chat's (Qwen model name, 32-byte hashes, heights), every 7th id
// missing (a gap in the started ids), every 11th still Started, every 13th validated by a high slot.
import { createHash } from 'node:crypto';
import { idLogFrom } from '../src/state/id-log.js';
import { makeRecord } from '../src/state/record.js';
import { withRoot } from '../src/state/root.js';
import { encodeStateSnapshot } from '../src/state/snapshot.js';
import { type InferenceRecord, InferenceStatus } from '../src/state/types.js';
import { makeFixture } from '../src/testing/session-fixture.js';

const records = Number(process.argv[2] ?? 20_000);
const runs = Number(process.argv[3] ?? 8);

const inferences = new Map<bigint, InferenceRecord>();
for (let i = 1; inferences.size < records; i++) {
  if (i % 7 === 3) continue;
  const id = BigInt(i);
  const started = i % 11 === 0;
  inferences.set(
    id,
    makeRecord({
      id,
      status: started ? InferenceStatus.Started : InferenceStatus.Finished,
      executorSlot: i % 16,
      model: 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8',
      promptHash: new Uint8Array(32).fill(1),
      responseHash: started ? new Uint8Array(0) : new Uint8Array(32).fill(2),
      inputLength: 100n,
      maxTokens: 64n,
      inputTokens: 12n,
      outputTokens: 64n,
      reservedCost: 16_400n,
      actualCost: 7_600n,
      startedAt: 1_763_000_000n + id,
      confirmedAt: 1_763_000_001n + id,
      votesValid: i % 5,
      votesInvalid: 0,
      validatedBy: i % 13 === 0 ? 2n ** 70n + id : 0n,
      startedAtHeight: 1_000n + id,
      confirmedAtHeight: 1_001n + id,
    }),
  );
}
const { root: _root, liveHash: _liveHash, ...working } = makeFixture({ tag: 'v5' }).state;
const state = withRoot({
  ...working,
  inferences,
  startedIds: idLogFrom(inferences.keys()),
  latestNonce: [...inferences.keys()].at(-1)!,
});
for (let run = 0; run < runs; run++) {
  // CPU time rather than wall time: on a loaded machine the wall clock mostly measures the others.
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const bytes = encodeStateSnapshot(state);
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  // The digest shows two trees encode the same bytes.
  const digest = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
  console.log(
    `${records} live records: CPU ${((cpu.user + cpu.system) / 1000).toFixed(1)} ms (wall ${wall.toFixed(1)} ms), ` +
      `${bytes.length} bytes, sha256 ${digest}…`,
  );
}
