// Manual measurement of apply and root costs (not a test: speed is not asserted). Run with
//   pnpm tsx --conditions=source packages/devshard/bench/apply-root.ts
import { PrivateKey } from '@gonka-gateway/chain';
import { newMsg, txOf } from '../src/proto/tx-builders.js';
import { signDiff } from '../src/signing/diff.js';
import { signExecutorReceipt } from '../src/signing/executor-receipt.js';
import { applyDiff } from '../src/state/apply-diff.js';
import { composeDiff } from '../src/state/compose.js';
import { createSessionState } from '../src/state/init.js';
import { updateRecord } from '../src/state/record.js';
import { liveHashOf, stateRootOf, withRoot } from '../src/state/root.js';
import type { SessionState } from '../src/state/types.js';

function time(label: string, runs: number, fn: () => unknown): void {
  for (let i = 0; i < Math.min(runs, 20); i++) fn();
  const t0 = performance.now();
  for (let i = 0; i < runs; i++) fn();
  const us = ((performance.now() - t0) * 1000) / runs;
  console.log(`${label.padEnd(58)} ${us.toFixed(1).padStart(9)} µs`);
}

const hosts = Array.from({ length: 16 }, (_, i) =>
  PrivateKey.fromHex((i + 1).toString(16).padStart(64, '0')),
);
const user = PrivateKey.fromHex('aa'.repeat(32));
const escrowId = '123456';
const start = (id: bigint) =>
  txOf.startInference(
    newMsg.startInference({
      inferenceId: id,
      promptHash: new Uint8Array(32).fill(1),
      model: 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8',
      inputLength: 1_000n,
      maxTokens: 1_000n,
      startedAt: 1_700_000_000n,
    }),
  );

for (const live of [0, 100, 300, 1_000]) {
  let s: SessionState = createSessionState({
    escrowId,
    tag: 'v5',
    creator: user.address,
    slots: hosts.map((h) => h.address),
    amount: 10n ** 15n,
    config: {
      tokenPrice: 1n,
      createDevshardFee: 10_000n,
      feePerNonce: 1_000n,
      voteThreshold: 8,
      validationRate: 1_000,
      sealGraceNonces: 1_000_000n,
      sealGraceSeconds: 3_600n,
      autoSealEveryNNonces: 150n,
      refusalTimeout: 60n,
      executionTimeout: 1_920n,
      maxTokensFloor: 64n,
    },
  });
  for (let i = 0; i < live; i++) s = composeDiff(s, [start(s.latestNonce + 1n)]).state;
  console.log(`\n${live} live records`);
  time('liveHashOf (all cached entries)', 200, () => liveHashOf(s.inferences));
  time('re-encoding every live record (what the entry cache avoids)', 50, () => {
    for (const r of s.inferences.values()) updateRecord(r, {});
  });
  time('stateRootOf (given live_hash)', 2_000, () => stateRootOf(s, s.liveHash));
  time('withRoot, live map changed', 200, () => withRoot({ ...s, inferences: new Map(s.inferences) }, s));
  time('composeDiff, no txs (live_hash reused)', 1_000, () => composeDiff(s, []));
  time('composeDiff, one StartInference', 500, () => composeDiff(s, [start(s.latestNonce + 1n)]));
  const empty = signDiff(user, escrowId, composeDiff(s, []).diff);
  time('applyDiff (strict), empty diff: 1 recovery', 50, () => applyDiff(s, empty));
  const id = s.latestNonce + 1n;
  const withStart = composeDiff(s, [start(id)]).state;
  const receipt = {
    inferenceId: id,
    promptHash: new Uint8Array(32).fill(1),
    model: 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8',
    inputLength: 1_000n,
    maxTokens: 1_000n,
    startedAt: 1_700_000_000n,
    escrowId,
    confirmedAt: 1_700_000_001n,
  };
  const executor = hosts[Number(id % 16n)]!;
  const confirm = txOf.confirmStart(
    newMsg.confirmStart({
      inferenceId: id,
      executorSig: signExecutorReceipt(executor, receipt),
      confirmedAt: 1_700_000_001n,
    }),
  );
  time('composeDiff, one ConfirmStart: 1 recovery', 50, () => composeDiff(withStart, [confirm]));
  const signed = signDiff(user, escrowId, composeDiff(withStart, [confirm]).diff);
  time('applyDiff (strict), one ConfirmStart: 2 recoveries', 50, () => applyDiff(withStart, signed));
}
