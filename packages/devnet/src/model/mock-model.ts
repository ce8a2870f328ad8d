// A deterministic OpenAI-compatible model. The completion is a function of the model name, the
// messages and the sampling parameters (not max_tokens, which only truncates it), so the same
// request always yields the same text, and a larger max_tokens extends it. Token counts come from
// the shared tokenizer for prompt and completion. Latency (time to first token, per token) is a
// runtime setting; zero means no timers at all.
import { sha256 } from '@gonka-gateway/chain';
import { type ChatRequest, promptText, requestedMaxTokens } from './chat-request.js';
import { countTokens } from './tokenizer.js';

export interface MockModelLatency {
  timeToFirstTokenMs: number;
  perTokenMs: number;
}

export interface Completion {
  id: string;
  created: number;
  model: string;
  /** Text deltas, one per completion token; their concatenation is `text`. */
  pieces: string[];
  text: string;
  promptTokens: number;
  completionTokens: number;
  finishReason: 'stop' | 'length';
}

const VOCABULARY = (
  'gonka devnet escrow slot nonce validator epoch block chain token host model prompt answer signal ' +
  'ledger quorum stake weight proof state root hash diff session receipt gateway network shard relay ' +
  'river stone cloud light seed field garden window harbor bridge lantern compass meadow forest ember ' +
  'silver copper amber cedar maple willow falcon otter heron quiet steady bright gentle swift patient'
).split(' ');

/** mulberry32: a tiny deterministic PRNG; quality is irrelevant, reproducibility is the point. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

const capitalize = (w: string) => w.charAt(0).toUpperCase() + w.slice(1);

export class MockModel {
  #latency: MockModelLatency;
  #counter = 0;

  constructor(latency: Partial<MockModelLatency> = {}) {
    this.#latency = { timeToFirstTokenMs: 0, perTokenMs: 0, ...latency };
  }

  get latency(): MockModelLatency {
    return { ...this.#latency };
  }

  setLatency(latency: Partial<MockModelLatency>): void {
    this.#latency = { ...this.#latency, ...latency };
  }

  complete(req: ChatRequest, nowMs = Date.now()): Completion {
    const identity = JSON.stringify([
      req.model,
      req.messages.map((m) => [m.role, m.content]),
      req.temperature ?? null,
      req.top_p ?? null,
      req.seed ?? null,
    ]);
    const digest = sha256(new TextEncoder().encode(identity));
    const view = new DataView(digest.buffer, digest.byteOffset, digest.byteLength);
    const next = prng(view.getUint32(0));
    const natural = 8 + (view.getUint32(4) % 57);
    const max = requestedMaxTokens(req);
    const length = max !== undefined && max < natural ? max : natural;

    const pieces: string[] = [];
    let sentenceStart = true;
    for (let i = 0; i < length; i++) {
      const r = next();
      const previousIsWord = i > 0 && !/^[.,]$/.test(pieces[i - 1]!);
      if (previousIsWord && i < length - 1 && r % 11 === 0) {
        const mark = r % 22 === 0 ? '.' : ',';
        pieces.push(mark);
        sentenceStart = mark === '.';
        continue;
      }
      const word = VOCABULARY[r % VOCABULARY.length]!;
      pieces.push(`${i === 0 ? '' : ' '}${sentenceStart ? capitalize(word) : word}`);
      sentenceStart = false;
    }
    const text = pieces.join('');
    this.#counter++;
    return {
      id: `chatcmpl-${Buffer.from(digest.subarray(8, 20)).toString('hex')}${this.#counter.toString(16)}`,
      created: Math.floor(nowMs / 1000),
      model: req.model,
      pieces,
      text,
      promptTokens: countTokens(promptText(req.messages)),
      completionTokens: pieces.length,
      finishReason: length < natural ? 'length' : 'stop',
    };
  }
}

export function usageOf(c: Completion) {
  return {
    prompt_tokens: c.promptTokens,
    completion_tokens: c.completionTokens,
    total_tokens: c.promptTokens + c.completionTokens,
  };
}

/** The non-streaming `chat.completion` body. */
export function completionBody(c: Completion) {
  return {
    id: c.id,
    object: 'chat.completion' as const,
    created: c.created,
    model: c.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant' as const, content: c.text },
        logprobs: null,
        finish_reason: c.finishReason,
      },
    ],
    usage: usageOf(c),
  };
}

/**
 * The SSE frames of a streamed completion: a role chunk, one chunk per token, a finish chunk, the
 * usage chunk when `include_usage` (other chunks then carry `usage: null`, as OpenAI does), `[DONE]`.
 */
export function streamFrames(c: Completion, includeUsage: boolean): string[] {
  const chunk = (choices: unknown[], usage?: unknown) =>
    `data: ${JSON.stringify({
      id: c.id,
      object: 'chat.completion.chunk',
      created: c.created,
      model: c.model,
      choices,
      ...(includeUsage ? { usage: usage ?? null } : {}),
    })}\n\n`;
  const frames = [
    chunk([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]),
  ];
  for (const piece of c.pieces) {
    frames.push(chunk([{ index: 0, delta: { content: piece }, logprobs: null, finish_reason: null }]));
  }
  frames.push(chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: c.finishReason }]));
  if (includeUsage) frames.push(chunk([], usageOf(c)));
  frames.push('data: [DONE]\n\n');
  return frames;
}
