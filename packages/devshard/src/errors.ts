// One error type for every protocol rejection. `code` is the stable, short reason (the strings quoted
// in devshard-protocol.md §5.4, otherwise a short form of the reference message); callers and tests
// branch on it, never on `message`, which adds detail.

export const DevshardErrorCode = {
  // Diff framing (§5.3 steps 1–3, 10).
  InvalidUserSignature: 'invalid user signature',
  InvalidNonce: 'invalid nonce',
  InvalidInferenceId: 'invalid inference id',
  MultipleStart: 'multiple start inference',
  MultipleForceHeightSyncTurn: 'multiple force height sync turn',
  PostStateRootMismatch: 'post state root mismatch',
  NonceLimitExceeded: 'nonce limit exceeded',
  // Transaction rules (§5.4).
  InsufficientBalance: 'insufficient balance',
  SessionFinalizing: 'session finalizing',
  MaxTokensBelowFloor: 'max tokens below floor',
  DuplicateInferenceId: 'duplicate inference id',
  CostOverflow: 'cost overflow',
  ActualCostExceedsReserved: 'actual cost exceeds reserved',
  InvalidTransition: 'invalid transition',
  InferenceNotFound: 'inference not found',
  InferenceSealed: 'inference sealed',
  InvalidExecutorSig: 'invalid executor sig',
  InvalidProposerSig: 'invalid proposer sig',
  WrongExecutorSlot: 'wrong executor slot',
  EscrowIdMismatch: 'escrow id mismatch',
  InvalidTimeoutReason: 'invalid timeout reason',
  SlotNotInGroup: 'slot not in group',
  DuplicateVote: 'duplicate vote',
  InvalidVoteSig: 'invalid vote sig',
  InsufficientVotes: 'insufficient votes',
  SelfValidation: 'self validation',
  AlreadyFinalizing: 'already finalizing',
  EmptyTx: 'empty tx',
  InvalidForceHeightSyncTurn: 'invalid force height sync turn',
  Unsupported: 'unsupported',
  // Height-sync log plane (§9).
  BadFraming: 'bad framing',
  AckSigInvalid: 'ack sig invalid',
  AckCausality: 'ack causality',
  HeightRegression: 'height regression',
  // Encodings.
  Malformed: 'malformed',
  NonCanonical: 'non-canonical encoding',
  // Session setup and settlement.
  InvalidConfig: 'invalid config',
  NotSettled: 'not settled',
} as const;
export type DevshardErrorCode = (typeof DevshardErrorCode)[keyof typeof DevshardErrorCode];

export class DevshardError extends Error {
  readonly code: DevshardErrorCode;

  constructor(code: DevshardErrorCode, detail?: string) {
    super(detail ? `${code}: ${detail}` : code);
    this.name = 'DevshardError';
    this.code = code;
  }
}

export function isDevshardError(error: unknown): error is DevshardError {
  return error instanceof DevshardError;
}
