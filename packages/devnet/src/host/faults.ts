// Fault switches of the devshard hosts (issue item 6), one per host address, carried in the devnet's
// FaultSettings (`devshardHosts`) so tests flip them with `devnet.faults.set` or
// `devnet.devshardHosts.setFault`, and the demo with POST /devnet/admin/faults. Plain JSON only.

/**
 * - `down`: the host's server is stopped (connections refused) until the fault is cleared.
 * - `refuse`: the executor gives no receipt (chat with a payload, challenge-receipt); the rest of
 *   the answer is normal, so the gateway sees a refusal (devshard-protocol.md §7.4 `refused`).
 * - `stall-after-receipt`: chat answers the receipt event, then keeps the stream open without
 *   executing until the client goes away: no Finish is ever produced (§7.4 `execution`).
 * - `cut-stream`: an executing chat stream is destroyed after `cutAfterFrames` model frames; the host
 *   still completes the inference, so its Finish waits in the mempool (recovered by the next contact,
 *   GET mempool or a verifier).
 * - `rate-limit`: every devshard route answers 429 `rate limit exceeded` (§4.1).
 * - `unavailable`: every devshard route answers 503 with `X-Devshard-Error: <devshardError>`
 *   (default `requests_disabled`, §4.1).
 * - `error`: every devshard route answers `status` (default 500) without touching the session.
 * - `wrong-state-sig`: state signatures (receipt event, GET signatures) are made over a wrong root;
 *   state_hash stays the true root, so the signature no longer recovers to the host.
 * - `bad-output`: the executor serves altered answer text (and Finishes over those bytes); honest
 *   validators find it invalid (validator.ts, §5.4 Validation/ValidationVote).
 * - `false-invalid`: every Validation and ValidationVote this host proposes says invalid.
 * - `no-validations`: this host proposes no Validation or ValidationVote.
 * - `error-body`: the executor serves an OpenAI error body instead of an answer and still Finishes
 *   billing its tokens: the case the error-miss path (MsgErrorMiss, verify-error-miss) refunds.
 * - `tampered-finish`: the executor serves the true answer but its Finish claims the hash of other
 *   bytes (the gateway's served-bytes check reports `mismatch`).
 * `bad-output`, `error-body` and `tampered-finish` count one use per execution; the validator modes
 * do not count uses.
 */
export type HostFaultMode =
  | 'down'
  | 'refuse'
  | 'stall-after-receipt'
  | 'cut-stream'
  | 'rate-limit'
  | 'unavailable'
  | 'error'
  | 'wrong-state-sig'
  | 'bad-output'
  | 'false-invalid'
  | 'no-validations'
  | 'error-body'
  | 'tampered-finish';

export const HOST_FAULT_MODES: readonly HostFaultMode[] = [
  'down',
  'refuse',
  'stall-after-receipt',
  'cut-stream',
  'rate-limit',
  'unavailable',
  'error',
  'wrong-state-sig',
  'bad-output',
  'false-invalid',
  'no-validations',
  'error-body',
  'tampered-finish',
];

export interface HostFault {
  mode: HostFaultMode;
  /** Affected requests before the fault clears itself (ignored by `down`); omitted = until cleared. */
  remaining?: number;
  /** `error`: the HTTP status (default 500). */
  status?: number;
  /** `unavailable`: the X-Devshard-Error value (default `requests_disabled`). */
  devshardError?: 'requests_disabled' | 'initializing' | 'chain_unavailable' | 'not_implemented';
  /** `cut-stream`: model frames written before the cut (default 2). */
  cutAfterFrames?: number;
}

/** Host address → its fault. */
export type HostFaults = Record<string, HostFault>;

/** The modes that answer every devshard route with an HTTP error before anything else runs. */
export const STATUS_FAULT_MODES: readonly HostFaultMode[] = ['rate-limit', 'unavailable', 'error'];

/** JSON schema of `devshardHosts` for the admin route. */
export const hostFaultsSchema = {
  type: ['object', 'null'],
  additionalProperties: {
    type: 'object',
    required: ['mode'],
    additionalProperties: false,
    properties: {
      mode: { enum: [...HOST_FAULT_MODES] },
      remaining: { type: 'integer', minimum: 1 },
      status: { type: 'integer', minimum: 400, maximum: 599 },
      devshardError: { enum: ['requests_disabled', 'initializing', 'chain_unavailable', 'not_implemented'] },
      cutAfterFrames: { type: 'integer', minimum: 0 },
    },
  },
} as const;
