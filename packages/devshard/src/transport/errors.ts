// Every way a call to a host can fail, as one error type with a stable `code` (devshard-protocol.md
// §4.1 statuses, §4.4 stream endings, §4.5 deadlines). Callers branch on `code` and `retryable`,
// never on `message`. A message never carries our request headers (the signature is a secret).

export const HostErrorCode = {
  // HTTP statuses of §4.1.
  BadRequest: 'bad_request',
  Unauthorized: 'unauthorized',
  Forbidden: 'forbidden',
  NotFound: 'not_found',
  Conflict: 'conflict',
  RateLimited: 'rate_limited',
  /** 500: the host did not accept the diffs (invalid nonce, root mismatch, balance, nonce limit…). */
  ApplyFailed: 'apply_failed',
  /** 503 with X-Devshard-Error ∈ {requests_disabled, initializing, chain_unavailable, not_implemented}. */
  Unavailable: 'unavailable',
  HttpStatus: 'http_status',
  // No usable HTTP answer.
  Network: 'network',
  Timeout: 'timeout',
  Aborted: 'aborted',
  // Stream and body problems (§4.4).
  /** EOF before a receipt and before [DONE]. */
  Truncated: 'truncated',
  /** EOF after the receipt but before [DONE] on a payload send: the execution output was cut. */
  TruncatedExecution: 'truncated_execution',
  LineTooLarge: 'line_too_large',
  BodyTooLarge: 'body_too_large',
  Malformed: 'malformed',
} as const;
export type HostErrorCode = (typeof HostErrorCode)[keyof typeof HostErrorCode];

const STATUS_CODES: ReadonlyMap<number, HostErrorCode> = new Map([
  [400, HostErrorCode.BadRequest],
  [401, HostErrorCode.Unauthorized],
  [403, HostErrorCode.Forbidden],
  [404, HostErrorCode.NotFound],
  [409, HostErrorCode.Conflict],
  [429, HostErrorCode.RateLimited],
  [500, HostErrorCode.ApplyFailed],
  [503, HostErrorCode.Unavailable],
]);

/** Failures worth another attempt later (same host, same request): load, outages, cut streams. */
const RETRYABLE: ReadonlySet<HostErrorCode> = new Set<HostErrorCode>([
  HostErrorCode.RateLimited,
  HostErrorCode.Unavailable,
  HostErrorCode.Network,
  HostErrorCode.Timeout,
  HostErrorCode.Truncated,
]);

export interface HostErrorDetails {
  /** HTTP status, when the host answered. */
  readonly status?: number;
  /** The `X-Devshard-Error` header of a 503 (or any status that carries it). */
  readonly hostError?: string;
  /** Start of the host's error body (bounded), for logs. */
  readonly body?: string;
  readonly cause?: unknown;
}

export class HostTransportError extends Error {
  readonly code: HostErrorCode;
  readonly status: number | undefined;
  readonly hostError: string | undefined;
  readonly body: string | undefined;

  constructor(code: HostErrorCode, detail: string, details: HostErrorDetails = {}) {
    super(`${code}: ${detail}`, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'HostTransportError';
    this.code = code;
    this.status = details.status;
    this.hostError = details.hostError;
    this.body = details.body;
  }

  get retryable(): boolean {
    return RETRYABLE.has(this.code);
  }
}

export function isHostTransportError(error: unknown): error is HostTransportError {
  return error instanceof HostTransportError;
}

export function hostErrorCodeForStatus(status: number): HostErrorCode {
  return STATUS_CODES.get(status) ?? HostErrorCode.HttpStatus;
}

/** The typed error for a non-200 answer (§4.1). */
export function hostStatusError(
  what: string,
  status: number,
  hostError: string | undefined,
  body: string,
): HostTransportError {
  const tag = hostError ? ` (${hostError})` : '';
  const text = body.trim().slice(0, 300);
  return new HostTransportError(
    hostErrorCodeForStatus(status),
    `${what}: status ${status}${tag}${text ? `: ${text}` : ''}`,
    { status, ...(hostError ? { hostError } : {}), body },
  );
}
