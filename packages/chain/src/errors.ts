// Every error the chain package throws, in one table (style.md: fastify's lib/errors.js). Callers and
// tests branch on the stable `code`, never on message text. Messages name an endpoint by its base
// (chain REST, public API, …) and path only, never a full URL: operators put API keys into URLs.
// Nothing here ever carries a private key, a signature or a request body.

export const CHAIN_ERRORS = {
  /** A caller passed a value that cannot be right (bad address, zero amount, …). Nothing was sent. */
  CHAIN_ERR_INVALID_ARGUMENT: 'invalid argument',
  /** A query needs a base URL that the client was not given. */
  CHAIN_ERR_NOT_CONFIGURED: 'endpoint not configured',
  /** A private key could not be read from the named env variable or file. */
  CHAIN_ERR_KEY_SOURCE: 'private key not loaded',
  /** Connection refused/reset, DNS failure: no HTTP answer at all. */
  CHAIN_ERR_UNREACHABLE: 'no response',
  /** No answer within the client's timeout. */
  CHAIN_ERR_TIMEOUT: 'timed out',
  /** An HTTP answer with a non-2xx status the caller does not treat as "absent". */
  CHAIN_ERR_HTTP_STATUS: 'error status',
  /** HTTP 404 where 404 means the thing does not exist (account, escrow, tx). */
  CHAIN_ERR_NOT_FOUND: 'not found',
  /** The node knows the account but it has never signed a tx, so no public key is on chain (§5). */
  CHAIN_ERR_PUBKEY_UNAVAILABLE: 'public key not published',
  /** A 2xx answer whose body is not the JSON shape we rely on. */
  CHAIN_ERR_BAD_RESPONSE: 'malformed response',
  /** No participant qualifies for a direct request (chain-and-network.md §4.1). */
  CHAIN_ERR_NO_ENDPOINT: 'no eligible endpoint',
  /** A node answered a signed direct request with 4xx/5xx (chain-and-network.md §4.6). */
  CHAIN_ERR_DIRECT_REJECTED: 'direct request rejected',
} as const;

export type ChainErrorCode = keyof typeof CHAIN_ERRORS;

export interface ChainErrorDetails {
  /** `METHOD path (base)`, e.g. `GET /cosmos/bank/v1beta1/balances/gonka1… (chain REST)`. */
  endpoint?: string;
  status?: number;
  /** Specific, non-secret explanation (field name, node message excerpt, …). */
  detail?: string;
  /** What the operator can do about it. */
  hint?: string;
  cause?: unknown;
}

const MAX_DETAIL = 300;

/** Node messages are quoted into errors: keep them short and on one line. */
export function excerpt(text: string, max = MAX_DETAIL): string {
  let flat = '';
  for (const ch of text) flat += ch < ' ' || ch === '\u007f' ? ' ' : ch;
  flat = flat.replace(/ {2,}/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

export class ChainError extends Error {
  override readonly name = 'ChainError';
  readonly code: ChainErrorCode;
  readonly endpoint: string | undefined;
  readonly status: number | undefined;
  readonly detail: string | undefined;
  readonly hint: string | undefined;

  constructor(code: ChainErrorCode, details: ChainErrorDetails = {}) {
    const summary =
      details.status === undefined ? CHAIN_ERRORS[code] : `${CHAIN_ERRORS[code]} (HTTP ${details.status})`;
    const head = details.endpoint ? `${details.endpoint}: ${summary}` : summary;
    const detail = details.detail === undefined ? undefined : excerpt(details.detail);
    super(
      detail ? `${head}: ${detail}` : head,
      details.cause === undefined ? undefined : { cause: details.cause },
    );
    this.code = code;
    this.endpoint = details.endpoint;
    this.status = details.status;
    this.detail = detail;
    this.hint = details.hint;
  }
}

export function isChainError(value: unknown, code?: ChainErrorCode): value is ChainError {
  return value instanceof ChainError && (code === undefined || value.code === code);
}
