// Pure helpers for choosing a diff's candidates (devshard-protocol.md §7.1): which host-proposed
// kinds to accept from a mempool, their dedup keys, and the composer's priority order.
import type { DevshardTx, EncodedTx, TxKind } from '../proto/devshard-tx.js';

/** Kinds a host may propose; anything else in a mempool is a host injecting user txs. */
export const MEMPOOL_KINDS: ReadonlySet<TxKind> = new Set([
  'confirmStart',
  'finishInference',
  'validation',
  'validationVote',
  'heightAck',
]);

export function isAcceptedMempoolTx(tx: DevshardTx): boolean {
  return tx.kind !== 'none' && MEMPOOL_KINDS.has(tx.kind);
}

/**
 * The dedup keys' format (§7.1), written only here: `finish:{id}`, `confirm:{id}`,
 * `validation:{id}:{slot}`, `vote:{id}:{slot}`, and `timeout:{id}` for the session's own
 * MsgTimeoutInference (so one inference never gets two; not a mempool kind).
 */
export const dedupKeys = Object.freeze({
  finish: (inferenceId: bigint) => `finish:${inferenceId}`,
  confirm: (inferenceId: bigint) => `confirm:${inferenceId}`,
  validation: (inferenceId: bigint, slot: number) => `validation:${inferenceId}:${slot}`,
  vote: (inferenceId: bigint, slot: number) => `vote:${inferenceId}:${slot}`,
  timeout: (inferenceId: bigint) => `timeout:${inferenceId}`,
});

/** The dedup key of a host-proposable tx (see dedupKeys); others are not deduplicated. */
export function dedupKey(tx: DevshardTx): string | undefined {
  switch (tx.kind) {
    case 'finishInference':
      return dedupKeys.finish(tx.msg.inferenceId);
    case 'confirmStart':
      return dedupKeys.confirm(tx.msg.inferenceId);
    case 'validation':
      return dedupKeys.validation(tx.msg.inferenceId, tx.msg.validatorSlot);
    case 'validationVote':
      return dedupKeys.vote(tx.msg.inferenceId, tx.msg.voterSlot);
    default:
      return undefined;
  }
}

/** ConfirmStart 0, Finish 1, Validation 2, ValidationVote 3, others 4. */
export function txPriority(tx: DevshardTx): number {
  switch (tx.kind) {
    case 'confirmStart':
      return 0;
    case 'finishInference':
      return 1;
    case 'validation':
      return 2;
    case 'validationVote':
      return 3;
    default:
      return 4;
  }
}

/** The pending queue sorted stably by priority, then this diff's own txs (Start, FinalizeRound, Timeout). */
export function orderCandidates(pending: readonly EncodedTx[], extra: readonly EncodedTx[]): EncodedTx[] {
  // Array.prototype.sort is stable (ES2019): equal priorities keep their queue order.
  const ordered = pending.slice().sort((a, b) => txPriority(a.tx) - txPriority(b.tx));
  for (const tx of extra) ordered.push(tx);
  return ordered;
}
