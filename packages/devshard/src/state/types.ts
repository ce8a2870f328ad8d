// The session replica (devshard-protocol.md §5.1). A SessionState is an immutable value: applying a
// diff returns a new one and leaves its input untouched, so the gateway can compose on a copy and a
// host can reject a diff without rolling anything back.
import type { HeightSyncCommit } from '../hash/rest-hash.js';
import type { SessionPhase } from '../hash/root-formula.js';
import type { IdLog } from './id-log.js';
import type { ProtocolProfile } from './profile.js';

/** Inference status, hashed as InferenceRecordProto.status (§1). */
export const InferenceStatus = {
  Pending: 0,
  Started: 1,
  Finished: 2,
  Challenged: 3,
  Validated: 4,
  Invalidated: 5,
  TimedOut: 6,
} as const;
export type InferenceStatus = (typeof InferenceStatus)[keyof typeof InferenceStatus];

/** Frozen at session open; every value must equal the hosts' (§5.2, §10 item 7). */
export interface SessionConfig {
  readonly tokenPrice: bigint;
  readonly createDevshardFee: bigint;
  readonly feePerNonce: bigint;
  /** Accept weight must be strictly greater (timeouts, error misses, validation votes). */
  readonly voteThreshold: number;
  /** Basis points; used by hosts to sample validations, not by the state machine. */
  readonly validationRate: number;
  readonly sealGraceNonces: bigint;
  readonly sealGraceSeconds: bigint;
  /** 0 means the default interval (150), as in the reference; it never means "every nonce". */
  readonly autoSealEveryNNonces: bigint;
  readonly refusalTimeout: bigint;
  readonly executionTimeout: bigint;
  /** MinTokensFloor of StartInference (64); 0 disables (the v4.1 fixture predates the floor). */
  readonly maxTokensFloor: bigint;
}

/** Slots are the ordered validator (cold) addresses; slot id = index; vote weight = slots per address. */
export interface Group {
  readonly slots: readonly string[];
  readonly slotCount: ReadonlyMap<string, number>;
  /** Address → its slot ids, ascending. */
  readonly slotsOf: ReadonlyMap<string, readonly number[]>;
}

export interface HostStats {
  readonly missed: number;
  readonly invalid: number;
  readonly cost: bigint;
  readonly requiredValidations: number;
  readonly completedValidations: number;
}

export interface InferenceRecordFields {
  readonly id: bigint;
  readonly status: InferenceStatus;
  readonly executorSlot: number;
  readonly model: string;
  readonly promptHash: Uint8Array;
  readonly responseHash: Uint8Array;
  readonly inputLength: bigint;
  readonly maxTokens: bigint;
  readonly inputTokens: bigint;
  readonly outputTokens: bigint;
  readonly reservedCost: bigint;
  readonly actualCost: bigint;
  /** Unix seconds (int64). */
  readonly startedAt: bigint;
  readonly confirmedAt: bigint;
  readonly votesValid: number;
  readonly votesInvalid: number;
  /** 128-bit slot bitmap (bit s = slot s). */
  readonly validatedBy: bigint;
  readonly startedAtHeight: bigint;
  readonly confirmedAtHeight: bigint;
}

/**
 * A live record with its InferenceRecordProto bytes, computed once per change (§6 live_hash). Made
 * by state/record.ts (compact layout: most fields are getters), so a changed copy is made with
 * `updateRecord`, never by spreading a record (a spread copies own fields only).
 */
export interface InferenceRecord extends InferenceRecordFields {
  readonly entry: Uint8Array;
}

/** Log-plane memory of heartbeats (§9 L1, L3): derived from the log, not hashed. */
export interface HeightSyncLog {
  readonly maxTurnSeq: bigint;
  /** Diff nonce → turn_seq of the first heartbeat in that diff. */
  readonly heartbeatTurns: ReadonlyMap<bigint, bigint>;
}

/**
 * Which signed-preimage style the session's hosts use for validations and votes (§12 #6): unknown
 * until the first such signature verifies, then pinned. Derived from the log, not hashed.
 */
export type VoteSigStyle = 'unknown' | 'plain' | 'tagged';

export interface SessionState {
  readonly escrowId: string;
  /** State-root tag (e.g. `v5`), hashed into every root and sent at settlement. */
  readonly tag: string;
  readonly profile: ProtocolProfile;
  /** Escrow creator: the only key accepted for diff user signatures. */
  readonly creator: string;
  readonly config: SessionConfig;
  readonly group: Group;
  readonly balance: bigint;
  readonly fees: bigint;
  readonly phase: SessionPhase;
  readonly finalizeNonce: bigint;
  readonly latestNonce: bigint;
  /** Live records by id, iterated in ascending id. */
  readonly inferences: ReadonlyMap<bigint, InferenceRecord>;
  /** Every id ever started; a started id that is not live is sealed. */
  readonly startedIds: IdLog;
  /** Indexed by slot id; one entry per slot from the start. */
  readonly hostStats: readonly HostStats[];
  readonly warmKeys: ReadonlyMap<number, string>;
  /** 32 bytes; all zero until something seals. */
  readonly sealedAcc: Uint8Array;
  readonly heightSync: HeightSyncCommit;
  readonly heightSyncLog: HeightSyncLog;
  readonly voteSigStyle: VoteSigStyle;
  /** live_hash of `inferences` (cache). */
  readonly liveHash: Uint8Array;
  /** State root at `latestNonce`. */
  readonly root: Uint8Array;
}

/** A state while a diff is being applied: the derived root is recomputed at the end. */
export type WorkingState = Omit<SessionState, 'root' | 'liveHash'>;
