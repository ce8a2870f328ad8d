// Every failure below the gateway (user session, host transport, chain) mapped to the gateway's
// OpenAI error table (packages/shared/src/errors.ts), in one place: a client sees a stable `code`
// and a message written for it, never a host's body, a signature or a stack (architecture §6).
import { type ChainErrorCode, isChainError } from '@gonka-gateway/chain';
import {
  HostErrorCode,
  isHostTransportError,
  isSessionError,
  SessionErrorCode,
} from '@gonka-gateway/devshard/session';
import { NotOwnedError } from '@gonka-gateway/escrow-runtime';
import { type ErrorCode, GatewayError } from '@gonka-gateway/shared';

interface Mapped {
  readonly code: ErrorCode;
  readonly message: string;
  /** Another escrow (a new nonce on another host) may serve the same request. */
  readonly tryNextEscrow: boolean;
}

const SESSION: Record<SessionErrorCode, Mapped> = {
  [SessionErrorCode.Diverged]: m('upstream_error', 'the escrow session stopped; try again', true),
  [SessionErrorCode.WriteFailed]: m(
    'service_unavailable',
    'the request could not be recorded; try again',
    true,
  ),
  [SessionErrorCode.OwnershipLost]: m(
    'service_unavailable',
    'the escrow moved to another replica; try again',
    true,
  ),
  [SessionErrorCode.Draining]: m('no_escrow_available', 'the escrow is draining', true),
  [SessionErrorCode.ClientAborted]: m('invalid_request', 'the client went away', false),
  [SessionErrorCode.DiffRejected]: m('upstream_error', 'the hosts refused the request', true),
  // Depleted: no request fits on this escrow; another escrow of the model may serve it.
  [SessionErrorCode.InsufficientBalance]: m('no_escrow_available', 'the escrow is depleted', true),
  // This request is too big for this escrow (not depleted): the next escrow of the model may fund it.
  [SessionErrorCode.RequestExceedsEscrow]: m(
    'insufficient_escrow_funds',
    'the escrow cannot fund this request; lower max_tokens or retry later',
    true,
  ),
  [SessionErrorCode.NonceLimit]: m('no_escrow_available', 'the escrow reached its nonce limit', true),
  [SessionErrorCode.MaxTokensBelowFloor]: m(
    'invalid_request',
    'max_tokens is below the network floor',
    false,
  ),
  [SessionErrorCode.NotActive]: m('no_escrow_available', 'the escrow is not active', true),
  [SessionErrorCode.NoEligibleHost]: m(
    'no_escrow_available',
    'no healthy host of the escrow is left to try',
    true,
  ),
  [SessionErrorCode.InferenceInFlight]: m('conflict', 'an inference is in flight', false),
  [SessionErrorCode.ComposeFailed]: m('upstream_error', 'the request could not be composed', true),
  [SessionErrorCode.WrongSigner]: m('internal_error', 'the escrow signer is misconfigured', true),
  [SessionErrorCode.NotFound]: m('escrow_not_found', 'no such escrow session', false),
  [SessionErrorCode.HistoryElsewhere]: m('service_unavailable', 'the escrow cannot be served here', true),
  [SessionErrorCode.CorruptStore]: m('internal_error', 'the escrow session cannot be loaded', true),
  [SessionErrorCode.NoQuorum]: m('upstream_error', 'not enough hosts signed', false),
  [SessionErrorCode.Closed]: m('no_escrow_available', 'the escrow session is closed', true),
  // §12 #1: the hosts' root layout differs from ours; the session has faulted.
  [SessionErrorCode.StampLayoutMismatch]: m('upstream_error', 'the escrow session stopped; try again', true),
  // Finalize only (devshard-protocol.md §8.1: no inference in flight); a chat request never meets it.
  [SessionErrorCode.CompletionPending]: m('conflict', 'inferences are still completing', false),
};

const HOST: Record<HostErrorCode, ErrorCode> = {
  [HostErrorCode.BadRequest]: 'upstream_error',
  [HostErrorCode.Unauthorized]: 'upstream_error',
  [HostErrorCode.Forbidden]: 'upstream_error',
  [HostErrorCode.NotFound]: 'upstream_error',
  [HostErrorCode.Conflict]: 'upstream_error',
  [HostErrorCode.RateLimited]: 'upstream_error',
  [HostErrorCode.ApplyFailed]: 'upstream_error',
  [HostErrorCode.Unavailable]: 'upstream_error',
  [HostErrorCode.HttpStatus]: 'upstream_error',
  [HostErrorCode.Network]: 'upstream_error',
  [HostErrorCode.Timeout]: 'upstream_timeout',
  [HostErrorCode.Aborted]: 'upstream_error',
  [HostErrorCode.Truncated]: 'upstream_error',
  [HostErrorCode.TruncatedExecution]: 'upstream_error',
  [HostErrorCode.LineTooLarge]: 'upstream_error',
  [HostErrorCode.BodyTooLarge]: 'upstream_error',
  [HostErrorCode.Malformed]: 'upstream_error',
};

const CHAIN: Record<ChainErrorCode, ErrorCode> = {
  CHAIN_ERR_INVALID_ARGUMENT: 'invalid_request',
  CHAIN_ERR_NOT_CONFIGURED: 'service_unavailable',
  CHAIN_ERR_KEY_SOURCE: 'internal_error',
  CHAIN_ERR_UNREACHABLE: 'chain_error',
  CHAIN_ERR_TIMEOUT: 'chain_error',
  CHAIN_ERR_HTTP_STATUS: 'chain_error',
  CHAIN_ERR_NOT_FOUND: 'chain_error',
  CHAIN_ERR_PUBKEY_UNAVAILABLE: 'chain_error',
  CHAIN_ERR_BAD_RESPONSE: 'chain_error',
  CHAIN_ERR_NO_ENDPOINT: 'chain_error',
  CHAIN_ERR_DIRECT_REJECTED: 'chain_error',
};

function m(code: ErrorCode, message: string, tryNextEscrow: boolean): Mapped {
  return { code, message, tryNextEscrow };
}

/** What a failure means for the client and for routing. Unknown errors are a 500 without detail. */
export function mapFailure(error: unknown): Mapped {
  if (error instanceof GatewayError) return m(error.code, error.message, false);
  if (error instanceof NotOwnedError) return m('no_escrow_available', 'the escrow is not served here', true);
  if (isSessionError(error)) return SESSION[error.code] ?? m('internal_error', 'internal error', false);
  if (isHostTransportError(error)) {
    const code = HOST[error.code] ?? 'upstream_error';
    return m(code, `the host failed (${error.code})`, true);
  }
  if (isChainError(error))
    return m(CHAIN[error.code] ?? 'chain_error', `chain request failed (${error.code})`, false);
  return m('internal_error', 'internal error', false);
}

/**
 * The escrow refused before a nonce was taken because it no longer serves here (draining, closed,
 * not active, owned elsewhere): nothing was started, so another replica's escrow may take the request.
 */
export function escrowNotServing(error: unknown): boolean {
  if (error instanceof NotOwnedError) return true;
  return (
    isSessionError(error) &&
    (error.code === SessionErrorCode.Draining ||
      error.code === SessionErrorCode.Closed ||
      error.code === SessionErrorCode.NotActive)
  );
}

/** The GatewayError a client receives for `error`. */
export function toGatewayError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  const mapped = mapFailure(error);
  return new GatewayError(mapped.code, mapped.message, { cause: error });
}
