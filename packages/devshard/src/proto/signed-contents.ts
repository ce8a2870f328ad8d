// Messages that exist only to be signed (devshard-protocol.md §3.3, §2.4). StateSignatureContent is
// encoded in hash/root-formula.ts.
import { defineMessage, type WithUnknown } from './codec.js';

export interface ExecutorReceiptContent extends WithUnknown {
  inferenceId: bigint;
  promptHash: Uint8Array;
  model: string;
  inputLength: bigint;
  maxTokens: bigint;
  startedAt: bigint;
  escrowId: string;
  confirmedAt: bigint;
  /** v5 only (fields 9, 10); zero and empty under the v4 profile. */
  observedHeight: bigint;
  observedBlockHash: Uint8Array;
}
export const ExecutorReceiptContentSchema = defineMessage<ExecutorReceiptContent>('ExecutorReceiptContent', [
  { no: 1, key: 'inferenceId', kind: 'uint64' },
  { no: 2, key: 'promptHash', kind: 'bytes' },
  { no: 3, key: 'model', kind: 'string' },
  { no: 4, key: 'inputLength', kind: 'uint64' },
  { no: 5, key: 'maxTokens', kind: 'uint64' },
  { no: 6, key: 'startedAt', kind: 'int64' },
  { no: 7, key: 'escrowId', kind: 'string' },
  { no: 8, key: 'confirmedAt', kind: 'int64' },
  { no: 9, key: 'observedHeight', kind: 'uint64' },
  { no: 10, key: 'observedBlockHash', kind: 'bytes' },
]);

export interface TimeoutVoteContent extends WithUnknown {
  escrowId: string;
  inferenceId: bigint;
  reason: number;
  accept: boolean;
}
export const TimeoutVoteContentSchema = defineMessage<TimeoutVoteContent>('TimeoutVoteContent', [
  { no: 1, key: 'escrowId', kind: 'string' },
  { no: 2, key: 'inferenceId', kind: 'uint64' },
  { no: 3, key: 'reason', kind: 'enum' },
  { no: 4, key: 'accept', kind: 'bool' },
]);

export interface ErrorMissVoteContent extends WithUnknown {
  escrowId: string;
  inferenceId: bigint;
  accept: boolean;
  responseHash: Uint8Array;
}
export const ErrorMissVoteContentSchema = defineMessage<ErrorMissVoteContent>('ErrorMissVoteContent', [
  { no: 1, key: 'escrowId', kind: 'string' },
  { no: 2, key: 'inferenceId', kind: 'uint64' },
  { no: 3, key: 'accept', kind: 'bool' },
  { no: 4, key: 'responseHash', kind: 'bytes' },
]);
