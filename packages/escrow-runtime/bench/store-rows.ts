// Rows the store benchmarks write: one escrow's session record and a typical request diff, built the
// same way by every bench so their figures compare.
import { newMsg, txOf } from '@gonka-gateway/devshard';
import type { SessionRecord, StoredDiff } from '@gonka-gateway/devshard/session';

export const benchRecord = (escrowId: string): SessionRecord => ({
  escrowId,
  escrow: {
    escrowId: BigInt(escrowId),
    creator: 'gonka1creator',
    amount: 10_000_000_000n,
    slots: Array.from({ length: 16 }, (_, i) => `gonka1host${i}`),
    tokenPrice: 2n,
    feePerNonce: 1_000n,
  },
  tag: 'v5',
  version: 'v5',
  chainParams: { refusalTimeout: 60n, executionTimeout: 1_920n },
});

const prompt = new TextEncoder().encode(
  JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(1_000) }] }),
);

/**
 * A typical request diff: its StartInference (with payload), plus a Confirm and a Finish of earlier
 * ones unless `startOnly`.
 */
export function requestDiff(nonce: bigint, startOnly = false): StoredDiff {
  const start = txOf.startInference(
    newMsg.startInference({
      inferenceId: nonce,
      promptHash: new Uint8Array(32).fill(1),
      model: 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8',
      inputLength: 1_000n,
      maxTokens: 512n,
      startedAt: 1_700_000_000n,
      observedHeight: 123_456n,
      observedBlockHash: new Uint8Array(32).fill(2),
    }),
  );
  const confirm = txOf.confirmStart(
    newMsg.confirmStart({ inferenceId: nonce, executorSig: new Uint8Array(65).fill(7), confirmedAt: 99n }),
  );
  const finish = txOf.finishInference(
    newMsg.finishInference({
      inferenceId: nonce,
      responseHash: new Uint8Array(32).fill(4),
      inputTokens: 1_000n,
      outputTokens: 300n,
      executorSlot: 3,
      proposerSig: new Uint8Array(65).fill(8),
      escrowId: '1',
      observedHeight: 123_457n,
      observedBlockHash: new Uint8Array(32).fill(5),
    }),
  );
  return {
    nonce,
    diff: {
      nonce,
      txs: startOnly ? [start] : [start, confirm, finish],
      userSig: new Uint8Array(65).fill(Number(nonce % 251n)),
      postStateRoot: new Uint8Array(32).fill(3),
    },
    root: new Uint8Array(32).fill(Number(nonce % 251n)),
    warmKeysBound: [],
    payload: { prompt, model: 'm', inputLength: 1_000n, maxTokens: 512n, startedAt: 1_700_000_000n },
  };
}

export const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
