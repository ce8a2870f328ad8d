// Reopen time and memory of long sessions (architecture §2 item 5); a measurement, not a test.
//   node --expose-gc --import tsx --conditions=source packages/devshard/bench/reopen.ts [sizes] [seconds-per-nonce]
// e.g. `… reopen.ts 1000,20000 10`. For each size it writes a session of that many nonces straight into
// an in-memory store (each diff: Start n, Confirm n−1, Finish n−2, signed by the user and host keys, 16
// slots on 5 hosts, v5), then times UserSession.open (strict replay, roots checked) without a snapshot
// and with the newest snapshot 499 diffs back (the worst case at snapshotEvery = 500), and reports the
// heap and RSS the opened session keeps. `seconds-per-nonce` sets the request rate and so how many
// records stay live (Finished records seal after seal grace + execution timeout = 5 520 s of
// state clock): 10 keeps ~570 live, 0.25 keeps every record of a 20 000-nonce session live.
import type { PrivateKey } from '@gonka-gateway/chain';
import { newMsg, txOf } from '../src/proto/tx-builders.js';
import { InMemorySessionStore } from '../src/session/memory-store.js';
import { encodeSessionSnapshot, restoreSnapshot } from '../src/session/snapshots.js';
import type { SessionStore, StoredSession } from '../src/session/store.js';
import { UserSession } from '../src/session/user-session.js';
import { signDiff } from '../src/signing/diff.js';
import { signExecutorReceipt } from '../src/signing/executor-receipt.js';
import { signFinish } from '../src/signing/proposer.js';
import { composeDiff } from '../src/state/compose.js';
import { sessionFromEscrow } from '../src/state/init.js';
import type { SessionState } from '../src/state/types.js';
import { ESCROW_ID, keyN, setup } from '../src/testing/session-setup.js';
import { wrapStore } from '../src/testing/wrap-store.js';

const sizes = (process.argv[2] ?? '1000,20000').split(',').map(Number);
const secondsPerNonce = Number(process.argv[3] ?? 10);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) console.warn('run with node --expose-gc for the memory numbers');

const T0 = 1_700_000_000n;
const MODEL = 'llama';
const PROMPT = new Uint8Array(32).fill(7);
const RESPONSE = new Uint8Array(32).fill(9);

function clockAt(n: bigint): bigint {
  return T0 + BigInt(Math.floor(Number(n) * secondsPerNonce));
}

/** Writes `size` diffs into a fresh store; saves a snapshot at `snapshotAt` as the session would. */
async function buildSession(size: number, snapshotAt: bigint) {
  const t = setup({ amount: 1_000_000_000_000_000n });
  const hosts: readonly PrivateKey[] = t.hostKeys;
  const store = new InMemorySessionStore();
  await store.create(t.record);
  const { fencingToken } = await store.acquire(ESCROW_ID);
  let state: SessionState = sessionFromEscrow(t.record.escrow, {
    tag: t.record.tag,
    chainParams: t.record.chainParams,
  }).state;
  const keyOf = (id: bigint) => hosts[Number(id % 16n) % hosts.length]!;
  const start = (id: bigint) =>
    txOf.startInference(
      newMsg.startInference({
        inferenceId: id,
        promptHash: PROMPT,
        model: MODEL,
        inputLength: 100n,
        maxTokens: 100n,
        startedAt: clockAt(id),
        protocolVersion: 'v5',
      }),
    );
  const confirm = (id: bigint) => {
    const confirmedAt = clockAt(id) + 1n;
    const executorSig = signExecutorReceipt(keyOf(id), {
      inferenceId: id,
      promptHash: PROMPT,
      model: MODEL,
      inputLength: 100n,
      maxTokens: 100n,
      startedAt: clockAt(id),
      escrowId: ESCROW_ID,
      confirmedAt,
    });
    return txOf.confirmStart(newMsg.confirmStart({ inferenceId: id, executorSig, confirmedAt }));
  };
  const finish = (id: bigint) =>
    txOf.finishInference(
      signFinish(
        keyOf(id),
        newMsg.finishInference({
          inferenceId: id,
          responseHash: RESPONSE,
          inputTokens: 100n,
          outputTokens: 60n,
          executorSlot: Number(id % 16n),
          escrowId: ESCROW_ID,
        }),
      ),
    );
  const t0 = performance.now();
  for (let n = 1n; n <= BigInt(size); n++) {
    const txs = [...(n > 1n ? [confirm(n - 1n)] : []), ...(n > 2n ? [finish(n - 2n)] : []), start(n)];
    const composed = composeDiff(state, txs, {}, { withPostStateRoot: true });
    if (composed.dropped.length > 0)
      throw new Error(`dropped at ${n}: ${composed.dropped[0]!.error.message}`);
    state = composed.state;
    await store.appendDiff(
      ESCROW_ID,
      {
        nonce: n,
        diff: signDiff(t.user, ESCROW_ID, composed.diff),
        root: state.root,
        warmKeysBound: composed.effects.warmKeysBound,
      },
      fencingToken,
    );
    if (n === snapshotAt) {
      const bytes = encodeSessionSnapshot(state, undefined);
      await store.saveSnapshot(ESCROW_ID, { nonce: n, root: state.root, state: bytes }, fencingToken);
    }
  }
  const buildMs = performance.now() - t0;
  return { t, store, state, buildMs };
}

/** The same store as seen by a session that never had snapshots: every diff from nonce 1. */
function withoutSnapshots(store: SessionStore): SessionStore {
  return wrapStore(store, {
    acquire: async (id): Promise<StoredSession> => {
      const s = await store.acquire(id);
      if (!s.snapshot) return s;
      const older = await store.readDiffs(id, 1n, s.snapshot.nonce);
      const { snapshot: _dropped, ...rest } = s;
      return { ...rest, diffs: [...older, ...s.diffs] };
    },
  });
}

function memory() {
  gc?.();
  gc?.();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, rss: m.rss };
}

const OPENED = 4;
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

async function open(t: ReturnType<typeof setup>, store: SessionStore) {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const session = await UserSession.open({
    store,
    escrowId: ESCROW_ID,
    signer: keyN(100),
    transport: t.net,
    resolveHost: t.net.resolveHost,
    clock: t.clock,
    maxNonce: 1_000_000n,
  });
  const ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { session, ms, cpuMs: (c.user + c.system) / 1000 };
}

/** Wall and process CPU (all threads) of `runs` opens: min and median; the machine is shared. */
async function timedOpens(t: ReturnType<typeof setup>, store: SessionStore, runs: number) {
  const wall: number[] = [];
  const cpu: number[] = [];
  let last: UserSession | undefined;
  for (let i = 0; i < runs; i++) {
    const r = await open(t, store);
    wall.push(r.ms);
    cpu.push(r.cpuMs);
    await r.session.close();
    last = r.session;
  }
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  const fmt = (xs: number[]) =>
    `min ${sorted(xs)[0]!.toFixed(0)} / median ${sorted(xs)[Math.floor(xs.length / 2)]!.toFixed(0)} ms`;
  return { session: last!, text: `wall ${fmt(wall)}, CPU ${fmt(cpu)}` };
}

console.log(`seconds per nonce ${secondsPerNonce}; node ${process.version}; ${new Date().toISOString()}`);
for (const size of sizes) {
  const snapshotAt = BigInt(size) - 499n;
  const { t, store, state, buildMs } = await buildSession(size, snapshotAt);
  console.log(
    `\n${size} nonces: ${state.inferences.size} live records, built in ${(buildMs / 1000).toFixed(1)} s`,
  );
  const r0 = performance.now();
  const restored = await restoreSnapshot(store, (await store.load(ESCROW_ID))!);
  if (!('base' in restored)) throw new Error(restored.rejected);
  const restoreMs = performance.now() - r0;
  const snap = await timedOpens(t, store, 3);
  if (!Buffer.from(snap.session.state.root).equals(Buffer.from(state.root))) throw new Error('root differs');
  console.log(
    `  reopen from snapshot at ${snapshotAt} (+499 diffs), 3 runs: ${snap.text} (snapshot decode + checks ${restoreMs.toFixed(0)} ms)`,
  );
  // Memory: several sessions opened (each fences the one before; all stay referenced), per session.
  const before = memory();
  const kept: UserSession[] = [];
  for (let i = 0; i < OPENED; i++) kept.push((await open(t, store)).session);
  const after = memory();
  console.log(
    `  memory per open session (${OPENED} opened, ${kept[0]!.state.inferences.size} live records, 499 diffs held): heap ${mb((after.heap - before.heap) / OPENED)}, RSS ${mb((after.rss - before.rss) / OPENED)}`,
  );
  for (const k of kept) await k.close();
  if (process.env.REOPEN_SKIP_FULL) continue;
  const full = await timedOpens(t, withoutSnapshots(store), 1);
  console.log(`  reopen without snapshot (${size} diffs), 1 run: ${full.text}`);
}
