// Chat requests as a gateway forwards them (varied prompts, streaming or not, max_tokens), run through
// UserSession.infer, and the checks that what came back is a proper OpenAI answer: the devnet's mock
// model is deterministic, so the expected text and token counts are known in advance.
import type { ChatMessage, ChatRequest, Completion, Devnet } from '@gonka-gateway/devnet';
import { QWEN_MODEL } from '@gonka-gateway/devnet';
import type {
  InferenceHandlers,
  InferenceInput,
  InferenceResult,
  UserSession,
} from '@gonka-gateway/devshard/session';
import { expect } from 'vitest';

export interface ChatCase {
  /** The exact body bytes (prompt_hash covers them, §2.5). */
  readonly input: InferenceInput & { readonly stream: boolean };
  readonly messages: ChatMessage[];
  /** max_tokens (or max_completion_tokens) in the body, if any. */
  readonly requested: number | undefined;
  readonly includeUsage: boolean;
  readonly temperature: number | undefined;
  readonly seed: number | undefined;
}

const TOPICS = [
  'Explain how an escrow protects both sides of a trade',
  'Write a haiku about validators',
  'What is a state root?',
  'Summarise the rules of chess in two sentences',
  'Translate "good morning" into French, German and Spanish',
  'List three uses of a Merkle tree',
  'Why do nonces never repeat?',
];
const MAX_TOKENS = [undefined, 16, 64, 200, 1000, 40];
/** The gateway's reservation when the body names no max_tokens (§5.4 floor: 64). */
const DEFAULT_MAX_TOKENS = 256;

/** Request `i` of a run (`tag` keeps prompts of different runs apart). */
export function chatCase(i: number, tag = ''): ChatCase {
  const topic = `${TOPICS[i % TOPICS.length]!} (#${i}${tag})`;
  let messages: ChatMessage[];
  if (i % 5 === 1)
    messages = [
      { role: 'system', content: 'You answer briefly.' },
      { role: 'user', content: topic },
    ];
  else if (i % 7 === 3)
    messages = [
      { role: 'user', content: 'Hello' },
      { role: 'assistant', content: 'Hello! How can I help?' },
      { role: 'user', content: topic },
    ];
  else if (i % 6 === 2) messages = [{ role: 'user', content: [{ type: 'text', text: topic }] }];
  else messages = [{ role: 'user', content: topic }];
  const requested = MAX_TOKENS[i % MAX_TOKENS.length];
  const stream = i % 2 === 0;
  const includeUsage = stream && i % 4 === 0;
  const temperature = i % 3 === 0 ? 0.7 : undefined;
  const seed = i % 8 === 5 ? i : undefined;
  const limitKey = i % 9 === 7 ? 'max_completion_tokens' : 'max_tokens';
  const body = {
    model: QWEN_MODEL,
    messages,
    ...(requested !== undefined ? { [limitKey]: requested } : {}),
    ...(stream ? { stream: true } : {}),
    ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(seed !== undefined ? { seed } : {}),
  };
  const bytes = new TextEncoder().encode(JSON.stringify(body));
  return {
    input: {
      body: bytes,
      model: QWEN_MODEL,
      // The gateway reserves on an upper bound of the prompt's tokens: its byte length.
      inputLength: BigInt(bytes.length),
      maxTokens: BigInt(Math.max(64, requested ?? DEFAULT_MAX_TOKENS)),
      stream,
    },
    messages,
    requested,
    includeUsage,
    temperature,
    seed,
  };
}

/** What the executor's model answers: the body's messages and sampling, at most the signed max_tokens. */
export function expectedCompletion(devnet: Devnet, c: ChatCase): Completion {
  const cap = Number(c.input.maxTokens);
  const request: ChatRequest = {
    model: c.input.model,
    messages: c.messages,
    max_tokens: c.requested !== undefined && c.requested < cap ? c.requested : cap,
    stream: c.input.stream,
    ...(c.temperature !== undefined ? { temperature: c.temperature } : {}),
    ...(c.seed !== undefined ? { seed: c.seed } : {}),
  };
  return devnet.model.complete(request);
}

export interface Served {
  readonly result: InferenceResult;
  /** Chunk lines as forwarded to the client (`data: …`). */
  readonly lines: string[];
  /** `[DONE]` lines. */
  readonly done: string[];
  readonly receipts: { nonce: bigint; confirmed: boolean }[];
}

const decoder = new TextDecoder();

/** One inference through the session, collecting what a proxy would forward. */
export async function serve(
  session: UserSession,
  c: ChatCase,
  handlers: Omit<InferenceHandlers, 'onChunk' | 'onDone'> = {},
): Promise<Served> {
  const lines: string[] = [];
  const done: string[] = [];
  const receipts: Served['receipts'] = [];
  const result = await session.infer(c.input, {
    ...handlers,
    onReceipt: (info) => {
      receipts.push({ ...info });
      handlers.onReceipt?.(info);
    },
    onChunk: (line) => lines.push(decoder.decode(line)),
    onDone: (line) => done.push(decoder.decode(line)),
  });
  return { result, lines, done, receipts };
}

/** Runs `fn` over `items` with at most `concurrency` at a time. */
export async function inPool<T>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<void>) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

// biome-ignore lint/suspicious/noExplicitAny: OpenAI JSON is walked structurally
type Json = any;

function dataOf(line: string): Json {
  expect(line.startsWith('data: ')).toBe(true);
  return JSON.parse(line.slice('data: '.length));
}

const usageOf = (c: Completion) => ({
  prompt_tokens: c.promptTokens,
  completion_tokens: c.completionTokens,
  total_tokens: c.promptTokens + c.completionTokens,
});

/**
 * A non-streamed answer is one `chat.completion` object; a streamed one is `chat.completion.chunk`s
 * (role first, one delta per token, the finish reason, the usage chunk when asked for) — both end with
 * `data: [DONE]`, and the text is the model's.
 */
export function expectProperCompletion(c: ChatCase, expected: Completion, served: Served): void {
  expect(served.done).toEqual(['data: [DONE]']);
  if (!c.input.stream) {
    expect(served.lines).toHaveLength(1);
    const body = dataOf(served.lines[0]!);
    expect(body).toEqual({
      id: expect.stringMatching(/^chatcmpl-/),
      object: 'chat.completion',
      created: expect.any(Number),
      model: QWEN_MODEL,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: expected.text },
          logprobs: null,
          finish_reason: expected.finishReason,
        },
      ],
      usage: usageOf(expected),
    });
    return;
  }
  const chunks = served.lines.map(dataOf);
  expect(chunks.length).toBeGreaterThanOrEqual(3);
  const id = chunks[0].id;
  expect(id).toMatch(/^chatcmpl-/);
  for (const chunk of chunks) {
    expect(chunk).toMatchObject({ id, object: 'chat.completion.chunk', model: QWEN_MODEL });
  }
  const withChoices = chunks.filter((k) => k.choices.length > 0);
  expect(withChoices[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
  const text = withChoices.map((k) => k.choices[0].delta.content ?? '').join('');
  expect(text).toBe(expected.text);
  const finishes = withChoices.map((k) => k.choices[0].finish_reason);
  expect(finishes.at(-1)).toBe(expected.finishReason);
  expect(finishes.slice(0, -1).every((f) => f === null)).toBe(true);
  if (c.includeUsage) {
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: usageOf(expected) });
    expect(withChoices.every((k) => k.usage === null)).toBe(true);
  } else {
    expect(chunks.every((k) => !('usage' in k))).toBe(true);
  }
}

/** Serves requests (each expected to complete) until the next nonce is executed by `address`. */
export async function serveUntilNextTargets(
  session: UserSession,
  executorOf: (nonce: bigint) => string,
  address: string,
  next: () => ChatCase,
): Promise<void> {
  while (executorOf(session.latestNonce + 1n) !== address) {
    const s = await serve(session, next());
    expect(s.result).toMatchObject({ status: 'completed', confirmed: true, finished: true });
  }
}
