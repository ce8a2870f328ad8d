// Fault switches of the devshard hosts, one per host address, carried in the devnet's
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
 * - `slow`: chat answers the receipt event as usual, then the model's frames on the fault's schedule
 *   instead of the model's latency: the first model frame (with a stream, the role frame and the
 *   first token together) after `firstTokenMs` (default 20000), each later token `perTokenMs`
 *   (default 50) apart (a non-streamed answer: its one frame after firstTokenMs + perTokenMs × (output
 *   tokens − 1)); then meta with the Finish and [DONE] as usual (§4.4). When the client goes away the
 *   waits end at once and the execution completes without them, so its Finish waits in the mempool as
 *   with `cut-stream`.
 * - `empty-after-receipt`: chat answers the receipt, no model frame, then meta and [DONE]; the
 *   execution still Finishes, over the bytes served (none: response_hash = sha256 of the empty
 *   string) with output_tokens 0 and the prompt's input tokens.
 * - `error-event`: chat answers the receipt, then one OpenAI error object as a data line
 *   `{"error": {"message", "type", "code", "status"}}` (type `invalid_request_error` for a 4xx
 *   `status`, else `api_error`; code and status both the number `status`, default 500; message default
 *   `upstream model error`), then meta and [DONE]. Nothing executes and no Finish is ever produced:
 *   once its Confirm is included the inference stays Started until the execution timeout (§7.4
 *   `execution`). A 4xx models a request the model refuses (e.g. context too long).
 * - `hang-before-headers`: a chat request with a payload is read, authenticated and decoded, then
 *   neither a status line nor a header is ever written and its diffs are not applied; when the client
 *   goes away (or the server closes) the connection just ends.
 * `bad-output`, `error-body`, `tampered-finish`, `cut-stream`, `slow`, `empty-after-receipt` and
 * `error-event` count one use per execution they affect (a chat with a payload whose receipt is
 * granted and whose inference is not already executing or done); `hang-before-headers` one use per
 * chat request with a payload; the validator modes do not count uses.
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
  | 'tampered-finish'
  | 'slow'
  | 'empty-after-receipt'
  | 'error-event'
  | 'hang-before-headers';

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
  'slow',
  'empty-after-receipt',
  'error-event',
  'hang-before-headers',
];

export interface HostFault {
  mode: HostFaultMode;
  /** Affected requests before the fault clears itself (ignored by `down`); omitted = until cleared. */
  remaining?: number;
  /**
   * `error`: the HTTP status (default 500). `error-event`: the status the error line reports (default
   * 500; 4xx = the request itself is bad).
   */
  status?: number;
  /** `error-event`: the error line's message (default `upstream model error`). */
  message?: string;
  /** `slow`: milliseconds from the receipt to the first model frame (default 20000). */
  firstTokenMs?: number;
  /** `slow`: milliseconds between later tokens (default 50). */
  perTokenMs?: number;
  /** `unavailable`: the X-Devshard-Error value (default `requests_disabled`). */
  devshardError?: 'requests_disabled' | 'initializing' | 'chain_unavailable' | 'not_implemented';
  /** `cut-stream`: model frames written before the cut (default 2). */
  cutAfterFrames?: number;
}

/** Host address → its fault. */
export type HostFaults = Record<string, HostFault>;

/** `slow` defaults. */
export const SLOW_FIRST_TOKEN_MS = 20_000;
export const SLOW_PER_TOKEN_MS = 50;

/** `error-event` defaults. */
export const ERROR_EVENT_STATUS = 500;
export const ERROR_EVENT_MESSAGE = 'upstream model error';

/** The modes that change what a fresh execution serves, taken once the receipt is granted. */
export const EXECUTION_FAULT_MODES: readonly HostFaultMode[] = [
  'cut-stream',
  'bad-output',
  'error-body',
  'tampered-finish',
  'slow',
  'empty-after-receipt',
  'error-event',
];

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
      message: { type: 'string' },
      firstTokenMs: { type: 'integer', minimum: 0 },
      perTokenMs: { type: 'integer', minimum: 0 },
    },
  },
} as const;
