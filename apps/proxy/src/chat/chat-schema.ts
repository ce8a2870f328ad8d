// The chat completion request (spec §2.7) as Fastify's validator sees it: a JSON object. Every
// parameter is checked by the request policy (request-policy.ts) in the policy stage, which names
// the parameter a refusal is about in OpenAI's words; known parameters pass through to the host.
export const chatBodySchema = { type: 'object' } as const;

export interface ChatBody {
  readonly model: string;
  readonly messages: readonly unknown[];
  readonly max_tokens?: number | null;
  readonly max_completion_tokens?: number | null;
  readonly stream?: boolean | null;
  readonly n?: number | null;
  readonly [field: string]: unknown;
}

export const escrowParamsSchema = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', pattern: '^[1-9][0-9]{0,19}$' } },
} as const;
