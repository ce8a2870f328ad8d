// DevshardTx, the oneof wrapper of every diff transaction (devshard-protocol.md §3.1), and EncodedTx:
// a transaction held together with its bytes. A host-proposed tx is kept as the bytes it arrived
// with and spliced into diffs unchanged (§10.1); it is decoded only to be read.
import {
  decodeMessage,
  defineMessage,
  encodeMessage,
  type MessageSchema,
  type WithUnknown,
} from './codec.js';
import {
  type MsgConfirmStart,
  MsgConfirmStartSchema,
  type MsgErrorMiss,
  MsgErrorMissSchema,
  type MsgFinalizeRound,
  MsgFinalizeRoundSchema,
  type MsgFinishInference,
  MsgFinishInferenceSchema,
  type MsgForceHeightSyncTurn,
  MsgForceHeightSyncTurnSchema,
  type MsgHeartbeat,
  MsgHeartbeatSchema,
  type MsgHeightAck,
  MsgHeightAckSchema,
  type MsgRevealSeed,
  MsgRevealSeedSchema,
  type MsgStartInference,
  MsgStartInferenceSchema,
  type MsgTimeoutInference,
  MsgTimeoutInferenceSchema,
  type MsgValidation,
  MsgValidationSchema,
  type MsgValidationVote,
  MsgValidationVoteSchema,
} from './tx-messages.js';

interface TxMessages {
  startInference: MsgStartInference;
  confirmStart: MsgConfirmStart;
  finishInference: MsgFinishInference;
  timeoutInference: MsgTimeoutInference;
  validation: MsgValidation;
  validationVote: MsgValidationVote;
  revealSeed: MsgRevealSeed;
  finalizeRound: MsgFinalizeRound;
  forceHeightSyncTurn: MsgForceHeightSyncTurn;
  heartbeat: MsgHeartbeat;
  heightAck: MsgHeightAck;
  errorMiss: MsgErrorMiss;
}
export type TxKind = keyof TxMessages;

/** A decoded transaction; `none` is a wrapper with no member this schema knows (§5.4: rejected). */
export type DevshardTx =
  | { readonly [K in TxKind]: { readonly kind: K; readonly msg: TxMessages[K] } }[TxKind]
  | { readonly kind: 'none' };

/** Oneof field numbers (§3.1); 12 and 13 are reserved. */
export const TX_FIELD_NUMBER: { readonly [K in TxKind]: number } = {
  startInference: 1,
  confirmStart: 2,
  finishInference: 3,
  timeoutInference: 4,
  validation: 5,
  validationVote: 6,
  revealSeed: 7,
  finalizeRound: 8,
  forceHeightSyncTurn: 9,
  heartbeat: 10,
  heightAck: 11,
  errorMiss: 14,
};

const MEMBER_SCHEMAS: { readonly [K in TxKind]: MessageSchema<TxMessages[K]> } = {
  startInference: MsgStartInferenceSchema,
  confirmStart: MsgConfirmStartSchema,
  finishInference: MsgFinishInferenceSchema,
  timeoutInference: MsgTimeoutInferenceSchema,
  validation: MsgValidationSchema,
  validationVote: MsgValidationVoteSchema,
  revealSeed: MsgRevealSeedSchema,
  finalizeRound: MsgFinalizeRoundSchema,
  forceHeightSyncTurn: MsgForceHeightSyncTurnSchema,
  heartbeat: MsgHeartbeatSchema,
  heightAck: MsgHeightAckSchema,
  errorMiss: MsgErrorMissSchema,
};

type TxWire = { [K in TxKind]?: TxMessages[K] } & WithUnknown;

const KINDS = (Object.keys(TX_FIELD_NUMBER) as TxKind[]).sort(
  (a, b) => TX_FIELD_NUMBER[a] - TX_FIELD_NUMBER[b],
);

export const DevshardTxSchema = defineMessage<TxWire>(
  'DevshardTx',
  KINDS.map((key) => ({
    no: TX_FIELD_NUMBER[key],
    key,
    kind: 'message' as const,
    schema: MEMBER_SCHEMAS[key] as MessageSchema<object>,
    oneof: true,
  })),
);

export interface EncodedTx {
  /**
   * The bytes spliced into DiffContent. For a received tx these are the received bytes whenever they
   * are canonical (always, from a Go peer); otherwise the Go re-encoding that peers verify against.
   */
  readonly bytes: Uint8Array;
  readonly tx: DevshardTx;
}

export interface DecodedTx extends EncodedTx {
  /** False when the received bytes were not Go's canonical encoding and `bytes` is the re-encoding. */
  readonly canonical: boolean;
}

/** Encodes a transaction built locally (a set oneof member is always emitted: finalize is `42 00`). */
export function encodeTx(tx: DevshardTx): EncodedTx {
  const wire: TxWire = tx.kind === 'none' ? {} : { [tx.kind]: tx.msg };
  return { bytes: encodeMessage(DevshardTxSchema, wire), tx };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Decodes a received DevshardTx, keeping its bytes; throws DevshardError(malformed). */
export function decodeTx(bytes: Uint8Array): DecodedTx {
  const wire = decodeMessage(DevshardTxSchema, bytes);
  let tx: DevshardTx = { kind: 'none' };
  for (const kind of KINDS) {
    const msg = wire[kind];
    if (msg !== undefined) tx = { kind, msg } as DevshardTx;
  }
  const canonicalBytes = encodeMessage(DevshardTxSchema, wire);
  const canonical = sameBytes(canonicalBytes, bytes);
  return { bytes: canonical ? bytes.slice() : canonicalBytes, tx, canonical };
}
