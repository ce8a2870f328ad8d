// Builders for transactions composed locally (start, confirm, finalize, timeout) and for tests and
// devnet hosts. Unset fields take their proto3 defaults.
import { createMessage } from './codec.js';
import { type EncodedTx, encodeTx } from './devshard-tx.js';
import {
  type MsgConfirmStart,
  MsgConfirmStartSchema,
  type MsgErrorMiss,
  MsgErrorMissSchema,
  type MsgFinishInference,
  MsgFinishInferenceSchema,
  type MsgHeartbeat,
  MsgHeartbeatSchema,
  type MsgHeightAck,
  MsgHeightAckSchema,
  type MsgStartInference,
  MsgStartInferenceSchema,
  type MsgTimeoutInference,
  MsgTimeoutInferenceSchema,
  type MsgValidation,
  MsgValidationSchema,
  type MsgValidationVote,
  MsgValidationVoteSchema,
  type SlotVote,
  TimeoutVoteSchema,
} from './tx-messages.js';

export const newMsg = {
  startInference: (f: Partial<MsgStartInference>) => createMessage(MsgStartInferenceSchema, f),
  confirmStart: (f: Partial<MsgConfirmStart>) => createMessage(MsgConfirmStartSchema, f),
  finishInference: (f: Partial<MsgFinishInference>) => createMessage(MsgFinishInferenceSchema, f),
  timeoutInference: (f: Partial<MsgTimeoutInference>) => createMessage(MsgTimeoutInferenceSchema, f),
  errorMiss: (f: Partial<MsgErrorMiss>) => createMessage(MsgErrorMissSchema, f),
  validation: (f: Partial<MsgValidation>) => createMessage(MsgValidationSchema, f),
  validationVote: (f: Partial<MsgValidationVote>) => createMessage(MsgValidationVoteSchema, f),
  vote: (f: Partial<SlotVote>) => createMessage(TimeoutVoteSchema, f),
  heartbeat: (f: Partial<MsgHeartbeat>) => createMessage(MsgHeartbeatSchema, f),
  heightAck: (f: Partial<MsgHeightAck>) => createMessage(MsgHeightAckSchema, f),
};

export const txOf = {
  startInference: (msg: MsgStartInference): EncodedTx => encodeTx({ kind: 'startInference', msg }),
  confirmStart: (msg: MsgConfirmStart): EncodedTx => encodeTx({ kind: 'confirmStart', msg }),
  finishInference: (msg: MsgFinishInference): EncodedTx => encodeTx({ kind: 'finishInference', msg }),
  timeoutInference: (msg: MsgTimeoutInference): EncodedTx => encodeTx({ kind: 'timeoutInference', msg }),
  errorMiss: (msg: MsgErrorMiss): EncodedTx => encodeTx({ kind: 'errorMiss', msg }),
  validation: (msg: MsgValidation): EncodedTx => encodeTx({ kind: 'validation', msg }),
  validationVote: (msg: MsgValidationVote): EncodedTx => encodeTx({ kind: 'validationVote', msg }),
  heartbeat: (msg: MsgHeartbeat): EncodedTx => encodeTx({ kind: 'heartbeat', msg }),
  heightAck: (msg: MsgHeightAck): EncodedTx => encodeTx({ kind: 'heightAck', msg }),
  /** Encodes as `42 00`. */
  finalizeRound: (): EncodedTx => encodeTx({ kind: 'finalizeRound', msg: {} }),
};
