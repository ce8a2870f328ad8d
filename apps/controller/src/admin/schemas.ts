// JSON-schema pieces shared by the admin routes (architecture §6: schemas on every route; the
// OpenAPI document is generated from them). Integers of money may come as a JSON integer or as a
// decimal string: JSON numbers above 2^53 lose precision before any code sees them, so such a
// number is refused and the string form is the safe one.
import { GatewayError, openAIErrorSchema } from '@gonka-gateway/shared';

export const uintSchema = {
  anyOf: [
    { type: 'integer', minimum: 0 },
    { type: 'string', pattern: '^(0|[1-9][0-9]{0,19})$' },
  ],
} as const;

export const escrowIdParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', pattern: '^[1-9][0-9]{0,19}$' } },
} as const;

export const envNameSchema = { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 128 } as const;

export const errorResponses = {
  400: openAIErrorSchema,
  401: openAIErrorSchema,
  403: openAIErrorSchema,
  404: openAIErrorSchema,
  409: openAIErrorSchema,
  502: openAIErrorSchema,
  504: openAIErrorSchema,
} as const;

/** A schema-checked uint (integer or decimal string) as bigint; unsafe JSON numbers are refused. */
export function toUint(value: number | string, field: string): bigint {
  if (typeof value === 'number' && !Number.isSafeInteger(value)) {
    throw new GatewayError(
      'invalid_request',
      `${field} is too large for a JSON number; send it as a decimal string`,
      {
        param: field,
      },
    );
  }
  const n = BigInt(value);
  if (n > 0xffff_ffff_ffff_ffffn)
    throw new GatewayError('invalid_request', `${field} exceeds uint64`, { param: field });
  return n;
}
