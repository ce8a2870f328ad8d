// What one request costs the devshard state layer as a session grows (docs/performance.md), not a
// test: speed is measured, never asserted. Per request the user side composes a diff carrying
// StartInference(k) with ConfirmStart and FinishInference of k − 1 (two receipt recoveries), signs
// it, and a host applies it strictly (three recoveries, root check). Reported per nonce:
// main-thread and whole-process CPU µs, with every record live (no sealing) and with sealing (grace
// 200 nonces, 0 s).
//   pnpm --filter @gonka-gateway/devshard bench:state            (all nonces)
//   pnpm --filter @gonka-gateway/devshard bench:state -- 100 1000 (chosen nonces)
//   pnpm --filter @gonka-gateway/devshard bench:state -- --rss 1000 [--finished]   (memory of one state)
import { readFileSync } from 'node:fs';
import { PrivateKey } from '@gonka-gateway/chain';
import { newMsg, txOf } from '../src/proto/tx-builders.js';
import { signDiff } from '../src/signing/diff.js';
import { signExecutorReceipt } from '../src/signing/executor-receipt.js';
import { signFinish } from '../src/signing/proposer.js';
import { applyDiff } from '../src/state/apply-diff.js';
import { composeDiff } from '../src/state/compose.js';
import { executorSlotFor } from '../src/state/group.js';
import { idLogFrom } from '../src/state/id-log.js';
import { createSessionState } from '../src/state/init.js';
import { makeRecord } from '../src/state/record.js';
import { withRoot } from '../src/state/root.js';
import {
  type InferenceRecord,
  InferenceStatus,
  type SessionConfig,
  type SessionState,
} from '../src/state/types.js';

const hosts = Array.from({ length: 16 }, (_, i) =>
  PrivateKey.fromHex((i + 1).toString(16).padStart(64, '0')),
);
const user = PrivateKey.fromHex('aa'.repeat(32));
const escrowId = '123456';
const MODEL = 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8';
const PROMPT = new Uint8Array(32).fill(1);
const RESPONSE = new Uint8Array(32).fill(2);
const STARTED_AT = 1_700_000_000n;

function config(sealing: boolean): SessionConfig {
  return {
    tokenPrice: 1n,
    createDevshardFee: 10_000n,
    feePerNonce: 1_000n,
    voteThreshold: 8,
    validationRate: 1_000,
    sealGraceNonces: sealing ? 200n : 1_000_000_000n,
    sealGraceSeconds: sealing ? 0n : 1_000_000_000n,
    autoSealEveryNNonces: 150n,
    refusalTimeout: 60n,
    executionTimeout: 1_920n,
    maxTokensFloor: 64n,
  };
}

/** A state at `nonce` whose records 1..nonce are all Finished (live or sealed by the config). */
function stateAt(nonce: number, sealing: boolean): SessionState {
  const base = createSessionState({
    escrowId,
    tag: 'v5',
    creator: user.address,
    slots: hosts.map((h) => h.address),
    amount: 10n ** 15n,
    config: config(sealing),
  });
  const firstLive = sealing ? Math.max(1, nonce - 200) : 1;
  const records = new Map<bigint, InferenceRecord>();
  for (let i = firstLive; i <= nonce; i++) {
    const id = BigInt(i);
    records.set(
      id,
      makeRecord({
        id,
        status: InferenceStatus.Finished,
        executorSlot: executorSlotFor(base.group, id),
        model: MODEL,
        promptHash: PROMPT,
        responseHash: RESPONSE,
        inputLength: 1_000n,
        maxTokens: 1_000n,
        inputTokens: 900n,
        outputTokens: 700n,
        reservedCost: 2_000n,
        actualCost: 1_600n,
        startedAt: STARTED_AT + id,
        confirmedAt: STARTED_AT + id + 1n,
        votesValid: 0,
        votesInvalid: 0,
        validatedBy: 0n,
        startedAtHeight: 0n,
        confirmedAtHeight: 0n,
      }),
    );
  }
  const ids = Array.from({ length: nonce }, (_, i) => BigInt(i + 1));
  const { liveHash: _l, root: _r, ...working } = base;
  return withRoot({
    ...working,
    latestNonce: BigInt(nonce),
    inferences: records,
    startedIds: idLogFrom(ids),
  });
}

const start = (id: bigint) =>
  txOf.startInference(
    newMsg.startInference({
      inferenceId: id,
      promptHash: PROMPT,
      model: MODEL,
      inputLength: 1_000n,
      maxTokens: 1_000n,
      startedAt: STARTED_AT + id,
    }),
  );

/** The txs of request k: Start(k), then Confirm(k − 1) and Finish(k − 1) signed by its executor. */
function requestTxs(k: bigint) {
  const prev = k - 1n;
  const executor = hosts[Number(prev % 16n)]!;
  const confirmedAt = STARTED_AT + prev + 1n;
  const receipt = {
    inferenceId: prev,
    promptHash: PROMPT,
    model: MODEL,
    inputLength: 1_000n,
    maxTokens: 1_000n,
    startedAt: STARTED_AT + prev,
    escrowId,
    confirmedAt,
  };
  const confirm = txOf.confirmStart(
    newMsg.confirmStart({
      inferenceId: prev,
      executorSig: signExecutorReceipt(executor, receipt),
      confirmedAt,
    }),
  );
  const finish = txOf.finishInference(
    signFinish(
      executor,
      newMsg.finishInference({
        inferenceId: prev,
        executorSlot: Number(prev % 16n),
        escrowId,
        responseHash: RESPONSE,
        inputTokens: 900n,
        outputTokens: 700n,
      }),
    ),
  );
  return [confirm, finish, start(k)];
}

/** CPU ns of the main thread (schedstat), or undefined off Linux. */
function mainThreadNs(): bigint | undefined {
  try {
    return BigInt(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]!);
  } catch {
    return undefined;
  }
}

interface Cost {
  readonly composeMainUs: number;
  readonly composeProcessUs: number;
  readonly applyMainUs: number;
  readonly applyProcessUs: number;
}

/** Runs `requests` requests from `s0`: pre-signs host txs, then times user side and host side apart. */
function measure(s0: SessionState, requests: number): Cost {
  // Request k = latestNonce + 1 carries Confirm/Finish of k − 1, which must be Pending: prime one.
  let s = composeDiff(s0, [start(s0.latestNonce + 1n)]).state;
  const txs = Array.from({ length: requests }, (_, i) => requestTxs(s.latestNonce + 1n + BigInt(i)));
  const states: SessionState[] = [];
  const diffs = [];
  let main = 0n;
  let cpu = 0;
  for (const t of txs) {
    states.push(s);
    const m0 = mainThreadNs() ?? 0n;
    const c0 = process.cpuUsage();
    const composed = composeDiff(s, t);
    const signed = signDiff(user, escrowId, composed.diff);
    const c1 = process.cpuUsage(c0);
    main += (mainThreadNs() ?? 0n) - m0;
    cpu += c1.user + c1.system;
    if (composed.dropped.length > 0) throw new Error(`dropped ${composed.dropped[0]!.error.message}`);
    diffs.push(signed);
    s = composed.state;
  }
  const composeMainUs = Number(main) / 1_000 / requests;
  const composeProcessUs = cpu / requests;
  main = 0n;
  cpu = 0;
  for (let i = 0; i < requests; i++) {
    const m0 = mainThreadNs() ?? 0n;
    const c0 = process.cpuUsage();
    applyDiff(states[i]!, diffs[i]!);
    const c1 = process.cpuUsage(c0);
    main += (mainThreadNs() ?? 0n) - m0;
    cpu += c1.user + c1.system;
  }
  return {
    composeMainUs,
    composeProcessUs,
    applyMainUs: Number(main) / 1_000 / requests,
    applyProcessUs: cpu / requests,
  };
}

function median(xs: number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

export function stateCostLines(nonces: readonly number[], requests = 200, rounds = 3): string[] {
  const lines = [
    `devshard state layer, CPU µs per request (median of ${rounds} × ${requests} requests; compose+sign = user side, apply = host strict apply)`,
    '| nonce | sealing | live records | compose+sign main | compose+sign process | host apply main | host apply process |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const sealing of [false, true]) {
    for (const nonce of nonces) {
      const s0 = stateAt(nonce, sealing);
      measure(s0, Math.min(requests, 30)); // warm-up
      const costs = Array.from({ length: rounds }, () => measure(s0, requests));
      const pick = (k: keyof Cost) => median(costs.map((c) => c[k])).toFixed(0);
      lines.push(
        `| ${nonce.toLocaleString('en')} | ${sealing ? 'yes' : 'no'} | ${s0.inferences.size.toLocaleString('en')} | ${pick('composeMainUs')} | ${pick('composeProcessUs')} | ${pick('applyMainUs')} | ${pick('applyProcessUs')} |`,
      );
    }
  }
  return lines;
}

/** Heap + off-heap (Buffers) bytes and RSS after full collections. */
function retained(): { bytes: number; rss: number } {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  const m = process.memoryUsage();
  return { bytes: m.heapUsed + m.external, rss: m.rss };
}

function memoryLine(what: string, before: { bytes: number; rss: number }, s: SessionState): string {
  const after = retained();
  const live = s.inferences.size;
  const mb = (b: number) => (b / 2 ** 20).toFixed(1);
  return `${what} (${live} live): heap + external +${mb(after.bytes - before.bytes)} MB (${Math.round((after.bytes - before.bytes) / live)} B per live record), RSS +${mb(after.rss - before.rss)} MB`;
}

/**
 * Memory of one session state at `nonce` with every record live (run with --expose-gc, one
 * measurement per process): by default a state whose `nonce` diffs were really composed (each a
 * Start: Pending records); `finished`: a state built of Finished records (what waits for its seal).
 */
export function stateMemoryLine(nonce: number, finished = false): string {
  const before = retained();
  if (finished) return memoryLine(`state at nonce ${nonce}, Finished records`, before, stateAt(nonce, false));
  let s = stateAt(0, false);
  for (let k = 1n; k <= BigInt(nonce); k++) s = composeDiff(s, [start(k)]).state;
  return memoryLine(`state at nonce ${nonce}, composed (Pending records)`, before, s);
}

if (process.argv[1]?.endsWith('state-cost.ts')) {
  const args = process.argv.slice(2).filter((a) => a !== '--');
  if (args[0] === '--rss') {
    console.log(stateMemoryLine(Number(args[1] ?? 1_000), args.includes('--finished')));
  } else {
    const nonces = args.length > 0 ? args.map(Number) : [100, 1_000, 5_000, 19_800];
    for (const line of stateCostLines(nonces, Number(process.env.BENCH_REQUESTS ?? 200))) console.log(line);
  }
}
