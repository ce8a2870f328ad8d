// One table of every error the gateway returns: stable code → HTTP status → OpenAI error type.
// Code throws `new GatewayError('code', …)`; clients and tests match the code, not the text.

export const ERROR_TABLE = {
  invalid_request: { status: 400, type: 'invalid_request_error' },
  invalid_json: { status: 400, type: 'invalid_request_error' },
  /** A request parameter the gateway does not know (OpenAI's code for it). */
  unknown_parameter: { status: 400, type: 'invalid_request_error' },
  missing_api_key: { status: 401, type: 'authentication_error' },
  invalid_api_key: { status: 401, type: 'authentication_error' },
  admin_key_required: { status: 401, type: 'authentication_error' },
  /** The settler cannot pay the settle tx fee (controller escrow/settle-fee.ts): nothing was finalized. */
  insufficient_funds: { status: 402, type: 'insufficient_funds' },
  forbidden: { status: 403, type: 'permission_error' },
  model_not_allowed: { status: 403, type: 'permission_error' },
  not_found: { status: 404, type: 'invalid_request_error' },
  model_not_found: { status: 404, type: 'invalid_request_error' },
  escrow_not_found: { status: 404, type: 'invalid_request_error' },
  conflict: { status: 409, type: 'invalid_request_error' },
  /**
   * The chain's approved_versions hold no devshard protocol version this gateway speaks: nothing is
   * signed or sent; it resolves when governance approves a supported version or the gateway is
   * upgraded, so a retry alone does not help.
   */
  unsupported_protocol_version: { status: 409, type: 'invalid_request_error' },
  body_too_large: { status: 413, type: 'invalid_request_error' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  rate_limited: { status: 429, type: 'rate_limit_error' },
  capacity_exceeded: { status: 429, type: 'rate_limit_error' },
  rate_limit_exceeded: { status: 429, type: 'rate_limit_error' },
  insufficient_quota: { status: 429, type: 'insufficient_quota' },
  internal_error: { status: 500, type: 'api_error' },
  upstream_error: { status: 502, type: 'api_error' },
  chain_error: { status: 502, type: 'api_error' },
  no_escrow_available: { status: 503, type: 'api_error' },
  /** No escrow of the model can fund this request's reservation (a smaller max_tokens may fit). */
  insufficient_escrow_funds: { status: 503, type: 'api_error' },
  poc_active: { status: 503, type: 'api_error' },
  service_unavailable: { status: 503, type: 'api_error' },
  upstream_timeout: { status: 504, type: 'api_error' },
} as const satisfies Record<string, { status: number; type: string }>;

export type ErrorCode = keyof typeof ERROR_TABLE;

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string };
}

export class GatewayError extends Error {
  override name = 'GatewayError';
  readonly status: number;
  readonly type: string;
  readonly param: string | null;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: { param?: string; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.status = ERROR_TABLE[code].status;
    this.type = ERROR_TABLE[code].type;
    this.param = options.param ?? null;
  }

  toBody(): OpenAIErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/**
 * The response for any thrown value: a GatewayError as itself (its messages are written for
 * clients), anything else as a generic 500 — never a stack trace or an internal message.
 */
export function toErrorResponse(err: unknown): { status: number; body: OpenAIErrorBody } {
  if (err instanceof GatewayError) return { status: err.status, body: err.toBody() };
  return { status: 500, body: new GatewayError('internal_error', 'internal error').toBody() };
}

/** JSON schema of the error body, for Fastify response schemas. */
export const openAIErrorSchema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['message', 'type', 'param', 'code'],
      properties: {
        message: { type: 'string' },
        type: { type: 'string' },
        param: { type: ['string', 'null'] },
        code: { type: 'string' },
      },
    },
  },
} as const;
