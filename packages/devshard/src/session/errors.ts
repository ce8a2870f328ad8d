// Why the user-side session refuses work (devshard-protocol.md §7, §8, §10), one error type with a
// stable `code`. Host failures after a diff was persisted are not thrown: they are reported in the
// inference result, because the nonce is spent either way.

export const SessionErrorCode = {
  /** A host's state_hash differed from our root (§7.2 step 1, §12 #5): stop, investigate. */
  Diverged: 'diverged',
  /**
   * A write-ahead did not go through (architecture §2.3): this request failed and nothing was sent.
   * The session stays usable: a refused write changed nothing, and a write of unknown outcome is
   * resolved (the identical diff appended again) before the next diff is composed.
   */
  WriteFailed: 'write_failed',
  /**
   * This process may no longer write the escrow (architecture §2.1): a newer owner's fencing token,
   * or the owner's write guard (lease) refused. Not a fault of the escrow: another owner carries on.
   */
  OwnershipLost: 'ownership_lost',
  /** drain() or close() was called: no new inference (architecture §2.6). */
  Draining: 'draining',
  /** The client went away before the inference took a nonce (architecture §5): nothing was spent. */
  ClientAborted: 'client_aborted',
  /** Every reachable host refused a fresh diff (apply failed): config drift or a composer bug. */
  DiffRejected: 'diff_rejected',
  /**
   * A root mismatch at or after the first height-stamped diff, before any host confirmed such a root:
   * the unpinned v5 record height fields (§12 #1) most likely differ from the hosts'. Stop.
   */
  StampLayoutMismatch: 'stamp_layout_mismatch',
  /**
   * The escrow is depleted: its balance cannot pay the smallest inference (one fee_per_nonce and the
   * reservation of max_tokens at the floor, §7.1 step 2, §5.4). No request can be served on it.
   */
  InsufficientBalance: 'insufficient_balance',
  /**
   * This request's reservation and fee exceed the balance (§7.1 step 2), but a smaller request would
   * still fit: the escrow is not depleted, another escrow may serve this one (funding.ts).
   */
  RequestExceedsEscrow: 'request_exceeds_escrow',
  /** Too close to max_nonce for new work (§7.5). */
  NonceLimit: 'nonce_limit',
  MaxTokensBelowFloor: 'max_tokens_below_floor',
  /**
   * Every participant of the group is one this inference must avoid (quarantined, or already tried
   * by the same client request): no nonce was spent.
   */
  NoEligibleHost: 'no_eligible_host',
  /** Phase is not Active (finalizing or settled). */
  NotActive: 'not_active',
  /**
   * Finalize would bill inferences that have neither a Finish nor a timeout (finalize-gate.ts); the
   * error lists their nonces. Retry later.
   */
  CompletionPending: 'completion_pending',
  /** Finalize needs no inference in flight (§8.1). */
  InferenceInFlight: 'inference_in_flight',
  /** The composer refused the diff (a failing StartInference, §5.3). */
  ComposeFailed: 'compose_failed',
  /** The signer is not the escrow creator (§10 item 8). */
  WrongSigner: 'wrong_signer',
  NotFound: 'not_found',
  /**
   * The store holds no diff of this escrow but its hosts do (history-probe.ts): another gateway
   * served it. Opening would sign nonce 1 a second time; nothing is signed.
   */
  HistoryElsewhere: 'history_elsewhere',
  /** Replaying stored diffs did not reproduce their stored roots (or the store's head cannot be read back). */
  CorruptStore: 'corrupt_store',
  /** Signature collection gave up before ⌊2S/3⌋+1 slots (§8.2). */
  NoQuorum: 'no_quorum',
  /** close() was called. */
  Closed: 'closed',
} as const;
export type SessionErrorCode = (typeof SessionErrorCode)[keyof typeof SessionErrorCode];

export class SessionError extends Error {
  readonly code: SessionErrorCode;

  constructor(code: SessionErrorCode, detail?: string, cause?: unknown) {
    super(detail ? `${code}: ${detail}` : code, cause === undefined ? undefined : { cause });
    this.name = 'SessionError';
    this.code = code;
  }
}

export function isSessionError(error: unknown): error is SessionError {
  return error instanceof SessionError;
}

/**
 * A funding verdict before any nonce is taken (funding.ts): `request_exceeds_escrow` (this request is
 * too big for the escrow) or `insufficient_balance` (the escrow is depleted). ngonka amounts.
 */
export class FundingError extends SessionError {
  constructor(
    code: typeof SessionErrorCode.RequestExceedsEscrow | typeof SessionErrorCode.InsufficientBalance,
    /** The reservation plus the fees this inference would take. */
    readonly needed: bigint,
    /** What the escrow could reserve now: its balance less the fees the inference takes (floored at 0). */
    readonly available: bigint,
    detail: string,
  ) {
    super(code, detail);
    this.name = 'FundingError';
  }
}

export function isFundingError(error: unknown): error is FundingError {
  return error instanceof FundingError;
}
