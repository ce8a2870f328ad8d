// devshard.v1 transaction messages (devshard-protocol.md §3.2). Field numbers are the spec's; every
// message keeps the unknown fields it was decoded with, so a host's signature over it still verifies.
import { defineMessage, type WithUnknown } from './codec.js';

export const TimeoutReason = { Unspecified: 0, Refused: 1, Execution: 2 } as const;
export type TimeoutReason = number;

export const AckStatus = { Unspecified: 0, Acked: 1, Missing: 2, Unreachable: 3, Rejected: 4 } as const;
export const SyncState = {
  Unspecified: 0,
  Synced: 1,
  CatchingUp: 2,
  OracleStale: 3,
  OracleUnavailable: 4,
} as const;

export interface MsgStartInference extends WithUnknown {
  inferenceId: bigint;
  promptHash: Uint8Array;
  model: string;
  inputLength: bigint;
  maxTokens: bigint;
  /** Unix seconds (int64). */
  startedAt: bigint;
  observedHeight: bigint;
  observedBlockHash: Uint8Array;
  /** Optional, newer hosts (§12 #10): set to the runtime name. */
  protocolVersion: string;
}
export const MsgStartInferenceSchema = defineMessage<MsgStartInference>('MsgStartInference', [
  { no: 1, key: 'inferenceId', kind: 'uint64' },
  { no: 2, key: 'promptHash', kind: 'bytes' },
  { no: 3, key: 'model', kind: 'string' },
  { no: 4, key: 'inputLength', kind: 'uint64' },
  { no: 5, key: 'maxTokens', kind: 'uint64' },
  { no: 6, key: 'startedAt', kind: 'int64' },
  { no: 7, key: 'observedHeight', kind: 'uint64' },
  { no: 8, key: 'observedBlockHash', kind: 'bytes' },
  { no: 9, key: 'protocolVersion', kind: 'string' },
]);

export interface MsgConfirmStart extends WithUnknown {
  inferenceId: bigint;
  executorSig: Uint8Array;
  confirmedAt: bigint;
  observedHeight: bigint;
  observedBlockHash: Uint8Array;
}
export const MsgConfirmStartSchema = defineMessage<MsgConfirmStart>('MsgConfirmStart', [
  { no: 1, key: 'inferenceId', kind: 'uint64' },
  { no: 2, key: 'executorSig', kind: 'bytes' },
  { no: 3, key: 'confirmedAt', kind: 'int64' },
  { no: 4, key: 'observedHeight', kind: 'uint64' },
  { no: 5, key: 'observedBlockHash', kind: 'bytes' },
]);

export interface MsgFinishInference extends WithUnknown {
  inferenceId: bigint;
  responseHash: Uint8Array;
  inputTokens: bigint;
  outputTokens: bigint;
  executorSlot: number;
  proposerSig: Uint8Array;
  escrowId: string;
  observedHeight: bigint;
  observedBlockHash: Uint8Array;
  servedHash: Uint8Array;
}
export const MsgFinishInferenceSchema = defineMessage<MsgFinishInference>('MsgFinishInference', [
  { no: 1, key: 'inferenceId', kind: 'uint64' },
  { no: 2, key: 'responseHash', kind: 'bytes' },
  { no: 3, key: 'inputTokens', kind: 'uint64' },
  { no: 4, key: 'outputTokens', kind: 'uint64' },
  { no: 5, key: 'executorSlot', kind: 'uint32' },
  { no: 6, key: 'proposerSig', kind: 'bytes' },
  { no: 7, key: 'escrowId', kind: 'string' },
  { no: 8, key: 'observedHeight', kind: 'uint64' },
  { no: 9, key: 'observedBlockHash', kind: 'bytes' },
  { no: 10, key: 'servedHash', kind: 'bytes' },
]);

/** TimeoutVote and ErrorMissVote share this layout. */
export interface SlotVote extends WithUnknown {
  voterSlot: number;
  accept: boolean;
  signature: Uint8Array;
}
export const TimeoutVoteSchema = defineMessage<SlotVote>('TimeoutVote', [
  { no: 1, key: 'voterSlot', kind: 'uint32' },
  { no: 2, key: 'accept', kind: 'bool' },
  { no: 3, key: 'signature', kind: 'bytes' },
]);
export const ErrorMissVoteSchema = defineMessage<SlotVote>('ErrorMissVote', TimeoutVoteSchema.fields);

export interface MsgTimeoutInference extends WithUnknown {
  inferenceId: bigint;
  reason: TimeoutReason;
  votes: SlotVote[];
}
export const MsgTimeoutInferenceSchema = defineMessage<MsgTimeoutInference>('MsgTimeoutInference', [
  { no: 1, key: 'inferenceId', kind: 'uint64' },
  { no: 2, key: 'reason', kind: 'enum' },
  { no: 3, key: 'votes', kind: 'repeated', schema: TimeoutVoteSchema },
]);

export interface MsgErrorMiss extends WithUnknown {
  inferenceId: bigint;
  votes: SlotVote[];
}
export const MsgErrorMissSchema = defineMessage<MsgErrorMiss>('MsgErrorMiss', [
  { no: 1, key: 'inferenceId', kind: 'uint64' },
  { no: 2, key: 'votes', kind: 'repeated', schema: ErrorMissVoteSchema },
]);

export interface MsgValidation extends WithUnknown {
  inferenceId: bigint;
  validatorSlot: number;
  valid: boolean;
  proposerSig: Uint8Array;
  escrowId: string;
}
export const MsgValidationSchema = defineMessage<MsgValidation>('MsgValidation', [
  { no: 1, key: 'inferenceId', kind: 'uint64' },
  { no: 2, key: 'validatorSlot', kind: 'uint32' },
  { no: 3, key: 'valid', kind: 'bool' },
  { no: 4, key: 'proposerSig', kind: 'bytes' },
  { no: 5, key: 'escrowId', kind: 'string' },
]);

export interface MsgValidationVote extends WithUnknown {
  inferenceId: bigint;
  voterSlot: number;
  voteValid: boolean;
  proposerSig: Uint8Array;
  escrowId: string;
}
export const MsgValidationVoteSchema = defineMessage<MsgValidationVote>('MsgValidationVote', [
  { no: 1, key: 'inferenceId', kind: 'uint64' },
  { no: 2, key: 'voterSlot', kind: 'uint32' },
  { no: 3, key: 'voteValid', kind: 'bool' },
  { no: 4, key: 'proposerSig', kind: 'bytes' },
  { no: 5, key: 'escrowId', kind: 'string' },
]);

/** Deprecated, applied as a no-op. */
export interface MsgRevealSeed extends WithUnknown {
  slotId: number;
  signature: Uint8Array;
  proposerSig: Uint8Array;
  escrowId: string;
}
export const MsgRevealSeedSchema = defineMessage<MsgRevealSeed>('MsgRevealSeed', [
  { no: 1, key: 'slotId', kind: 'uint32' },
  { no: 2, key: 'signature', kind: 'bytes' },
  { no: 3, key: 'proposerSig', kind: 'bytes' },
  { no: 4, key: 'escrowId', kind: 'string' },
]);

export type MsgFinalizeRound = WithUnknown;
export const MsgFinalizeRoundSchema = defineMessage<MsgFinalizeRound>('MsgFinalizeRound', []);

export interface MsgForceHeightSyncTurn extends WithUnknown {
  triggerNonce: bigint;
  endNonce: bigint;
  anchorK: bigint;
  slotsNum: bigint;
  reason: string;
}
export const MsgForceHeightSyncTurnSchema = defineMessage<MsgForceHeightSyncTurn>('MsgForceHeightSyncTurn', [
  { no: 1, key: 'triggerNonce', kind: 'uint64' },
  { no: 2, key: 'endNonce', kind: 'uint64' },
  { no: 3, key: 'anchorK', kind: 'uint64' },
  { no: 4, key: 'slotsNum', kind: 'uint64' },
  { no: 5, key: 'reason', kind: 'string' },
]);

export interface SyncVectorEntry extends WithUnknown {
  slotId: number;
  status: number;
  observedHeight: bigint;
  ackNonce: bigint;
}
export const SyncVectorEntrySchema = defineMessage<SyncVectorEntry>('SyncVectorEntry', [
  { no: 1, key: 'slotId', kind: 'uint32' },
  { no: 2, key: 'status', kind: 'enum' },
  { no: 3, key: 'observedHeight', kind: 'uint64' },
  { no: 4, key: 'ackNonce', kind: 'uint64' },
]);

export interface MsgHeartbeat extends WithUnknown {
  turnSeq: bigint;
  observedHeight: bigint;
  observedBlockHash: Uint8Array;
  slotsNum: bigint;
  reason: string;
  syncVector: SyncVectorEntry[];
}
export const MsgHeartbeatSchema = defineMessage<MsgHeartbeat>('MsgHeartbeat', [
  { no: 1, key: 'turnSeq', kind: 'uint64' },
  { no: 2, key: 'observedHeight', kind: 'uint64' },
  { no: 3, key: 'observedBlockHash', kind: 'bytes' },
  { no: 4, key: 'slotsNum', kind: 'uint64' },
  { no: 5, key: 'reason', kind: 'string' },
  { no: 6, key: 'syncVector', kind: 'repeated', schema: SyncVectorEntrySchema },
]);

export interface MsgHeightAck extends WithUnknown {
  turnSeq: bigint;
  refNonce: bigint;
  slotId: number;
  observedHeight: bigint;
  observedBlockHash: Uint8Array;
  syncState: number;
  peerSeen: Uint8Array;
  hostSig: Uint8Array;
}
export const MsgHeightAckSchema = defineMessage<MsgHeightAck>('MsgHeightAck', [
  { no: 1, key: 'turnSeq', kind: 'uint64' },
  { no: 2, key: 'refNonce', kind: 'uint64' },
  { no: 3, key: 'slotId', kind: 'uint32' },
  { no: 4, key: 'observedHeight', kind: 'uint64' },
  { no: 5, key: 'observedBlockHash', kind: 'bytes' },
  { no: 6, key: 'syncState', kind: 'enum' },
  { no: 7, key: 'peerSeen', kind: 'bytes' },
  { no: 8, key: 'hostSig', kind: 'bytes' },
]);
