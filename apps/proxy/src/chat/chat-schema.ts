// The chat completion request (spec §2.7) as Fastify validates it: model, messages and the fields
// the gateway acts on are checked; every other OpenAI field passes through to the host unchanged.
export const chatBodySchema = {
  type: 'object',
  required: ['model', 'messages'],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 256 },
    messages: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['role'],
        properties: { role: { type: 'string', minLength: 1 } },
      },
    },
    max_tokens: { type: 'integer', minimum: 1 },
    max_completion_tokens: { type: 'integer', minimum: 1 },
    stream: { type: 'boolean' },
    n: { type: 'integer', minimum: 1 },
    stream_options: {
      type: ['object', 'null'],
      properties: { include_usage: { type: 'boolean' } },
    },
  },
} as const;

export interface ChatBody {
  readonly model: string;
  readonly messages: readonly unknown[];
  readonly max_tokens?: number;
  readonly max_completion_tokens?: number;
  readonly stream?: boolean;
  readonly n?: number;
  readonly [field: string]: unknown;
}

export const escrowParamsSchema = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', pattern: '^[1-9][0-9]{0,19}$' } },
} as const;
