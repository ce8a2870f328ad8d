// The OpenAI chat request fields the mock model reads, and the JSON schema routes validate it with.
// Content must be a string or an array of {type: "text"} parts (chain-and-network.md §4.6: anything
// else is a 400 on a network node).

export interface ChatTextPart {
  type: 'text';
  text: string;
}

export interface ChatMessage {
  role: string;
  content: string | ChatTextPart[];
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  max_tokens?: number;
  max_completion_tokens?: number;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  temperature?: number;
  top_p?: number;
  seed?: number;
  logprobs?: boolean;
  top_logprobs?: number;
  stop?: string | string[];
  /** Functions the model may call (OpenAI `tools`); only `function.name` and `parameters` are read. */
  tools?: ChatTool[];
  tool_choice?: 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };
  response_format?:
    | { type: 'text' | 'json_object' }
    | { type: 'json_schema'; json_schema: { schema?: unknown } };
}

export interface ChatTool {
  type: 'function';
  function: { name: string; parameters?: unknown };
}

export const chatRequestSchema = {
  type: 'object',
  required: ['model', 'messages'],
  properties: {
    model: { type: 'string', minLength: 1 },
    messages: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['role', 'content'],
        properties: {
          role: { type: 'string', minLength: 1 },
          content: {
            anyOf: [
              { type: 'string' },
              {
                type: 'array',
                items: {
                  type: 'object',
                  required: ['type', 'text'],
                  properties: { type: { const: 'text' }, text: { type: 'string' } },
                },
              },
            ],
          },
        },
      },
    },
    max_tokens: { type: 'integer', minimum: 1 },
    max_completion_tokens: { type: 'integer', minimum: 1 },
    stream: { type: 'boolean' },
    stream_options: { type: 'object', properties: { include_usage: { type: 'boolean' } } },
    temperature: { type: 'number' },
    top_p: { type: 'number' },
    seed: { type: 'integer' },
  },
} as const;

export function messageText(content: ChatMessage['content']): string {
  return typeof content === 'string' ? content : content.map((p) => p.text).join(' ');
}

/** The prompt as the tokenizer sees it: `role: text` lines. */
export function promptText(messages: readonly ChatMessage[]): string {
  return messages.map((m) => `${m.role}: ${messageText(m.content)}`).join('\n');
}

export function requestedMaxTokens(req: ChatRequest): number | undefined {
  return req.max_completion_tokens ?? req.max_tokens;
}

/** Response schema of a non-streamed completion (also makes Fastify serialise it fast). */
export const chatCompletionResponseSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    object: { type: 'string' },
    created: { type: 'integer' },
    model: { type: 'string' },
    choices: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          index: { type: 'integer' },
          message: {
            type: 'object',
            properties: {
              role: { type: 'string' },
              content: { type: ['string', 'null'] },
              tool_calls: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    id: { type: 'string' },
                    type: { type: 'string' },
                    function: {
                      type: 'object',
                      properties: { name: { type: 'string' }, arguments: { type: 'string' } },
                    },
                  },
                },
              },
            },
          },
          // null, or { content: [...] } when asked for: any JSON.
          logprobs: {},
          finish_reason: { type: 'string' },
        },
      },
    },
    usage: {
      type: 'object',
      properties: {
        prompt_tokens: { type: 'integer' },
        completion_tokens: { type: 'integer' },
        total_tokens: { type: 'integer' },
      },
    },
  },
} as const;
