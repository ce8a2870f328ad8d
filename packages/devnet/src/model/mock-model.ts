// A deterministic OpenAI-compatible model. The completion is a function of the model name, the
// messages and the sampling parameters (not max_tokens, which only truncates it), so the same
// request always yields the same text, and a larger max_tokens extends it. Token counts come from
// the shared tokenizer for prompt and completion. Latency (time to first token, per token) is a
// runtime setting; zero means no timers at all. As a served model does for OpenAI clients' tools and
// structured output: a request with `tools` gets a call of one of them (the named one for a named
// tool_choice, else the first; none for tool_choice "none", nor in answer to a tool result unless a
// call is required), its arguments generated from the function's JSON schema; a `json_schema`
// response_format gets a JSON value generated from its schema, `json_object` one generated from a
// schema found in the prompt (else an object with one "answer"). `stop` ends an answer before its
// first stop sequence (finish_reason "stop"). `logprobs` (with `top_logprobs`) gets a log
// probability per token of a text answer. JSON streams in pieces as words do, truncated by
// max_tokens the same way.
import { sha256 } from '@gonka-gateway/chain';
import {
  type ChatRequest,
  type ChatTool,
  messageText,
  promptText,
  requestedMaxTokens,
} from './chat-request.js';
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
  /** The answer's text, or the tool call's arguments (JSON). */
  text: string;
  /** The function called instead of a text answer; its arguments are `text`. */
  toolCall?: { id: string; name: string };
  /** Per piece of a text answer, when the request asks for logprobs (OpenAI's `logprobs.content`). */
  logprobs?: TokenLogprob[];
  promptTokens: number;
  completionTokens: number;
  finishReason: 'stop' | 'length' | 'tool_calls';
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

export interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

const bytesOf = (token: string) => [...Buffer.from(token, 'utf8')];

/**
 * Log probabilities of `pieces`, drawn with `next`: each piece the most likely token, then `top - 1`
 * vocabulary words less likely (OpenAI's shape; top_logprobs up to 20).
 */
function logprobsOf(pieces: readonly string[], top: number, next: () => number): TokenLogprob[] {
  return pieces.map((token) => {
    const logprob = -((next() % 1000) / 1000);
    const others = Array.from({ length: Math.max(0, Math.min(top, 20) - 1) }, (_, k) => {
      const word = ` ${VOCABULARY[next() % VOCABULARY.length]}`;
      return { token: word, logprob: logprob - 1 - k, bytes: bytesOf(word) };
    });
    const top_logprobs = top > 0 ? [{ token, logprob, bytes: bytesOf(token) }, ...others] : [];
    return { token, logprob, bytes: bytesOf(token), top_logprobs };
  });
}

/**
 * A value that fits a JSON schema, drawn with `next`: `const`, then `enum`, then the first
 * non-null branch of anyOf/oneOf/allOf, then by type (every property of an object, 1–3 array items,
 * a word for a string, an integer within minimum/maximum for a number). `$ref` and formats are not
 * followed: the model answers, it does not validate.
 */
export function sampleOfSchema(schema: unknown, next: () => number, depth = 0): unknown {
  if (schema === null || typeof schema !== 'object' || depth > 8) return null;
  const s = schema as Record<string, unknown>;
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[next() % s.enum.length];
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    const options = s[key];
    if (Array.isArray(options) && options.length > 0) {
      const branch = options.find((o) => (o as { type?: unknown })?.type !== 'null') ?? options[0];
      return sampleOfSchema(branch, next, depth + 1);
    }
  }
  const type = Array.isArray(s.type)
    ? s.type.find((t) => t !== 'null')
    : (s.type ?? (s.properties ? 'object' : undefined));
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      const properties = (s.properties ?? {}) as Record<string, unknown>;
      for (const [name, property] of Object.entries(properties))
        out[name] = sampleOfSchema(property, next, depth + 1);
      return out;
    }
    case 'array': {
      const count = Math.min(3, Math.max(1, Number(s.minItems ?? 1) || 1));
      return Array.from({ length: count }, () => sampleOfSchema(s.items, next, depth + 1));
    }
    case 'integer':
    case 'number': {
      // Small numbers, as a model writes them: from 0 (or the nearest bound) up to 100 more.
      const min = typeof s.minimum === 'number' ? Math.ceil(s.minimum) : Number.MIN_SAFE_INTEGER;
      const max = typeof s.maximum === 'number' ? Math.floor(s.maximum) : Number.MAX_SAFE_INTEGER;
      const low = Math.min(Math.max(0, min), max);
      return low + (next() % (Math.min(max - low, 100) + 1));
    }
    case 'boolean':
      return next() % 2 === 0;
    case 'null':
      return null;
    default:
      return VOCABULARY[next() % VOCABULARY.length];
  }
}

/** JSON text in pieces as a tokenizer would cut it: runs of letters and digits, or one other char. */
const jsonPieces = (json: string) => json.match(/[A-Za-z0-9_]+|./gs) ?? [];

/**
 * The JSON schema a prompt asks the answer to follow, for a `json_object` request: the first JSON
 * object in the messages that reads as a schema (JSON mode leaves the shape to the prompt; a served
 * model follows a schema written there). Undefined when there is none: the model cannot guess one.
 */
function schemaInPrompt(req: ChatRequest): unknown {
  for (const message of req.messages) {
    const text = messageText(message.content);
    for (let at = text.indexOf('{'); at >= 0 && at < 65_536; at = text.indexOf('{', at + 1)) {
      let depth = 0;
      for (let end = at; end < text.length; end++) {
        if (text[end] === '{') depth++;
        else if (text[end] === '}' && --depth === 0) {
          try {
            const value = JSON.parse(text.slice(at, end + 1)) as Record<string, unknown>;
            if (value && typeof value === 'object' && (value.properties || value.type === 'object'))
              return value;
          } catch {
            // Not JSON: look further.
          }
          break;
        }
      }
    }
  }
  return undefined;
}

/**
 * `pieces` up to the first occurrence of a stop sequence, which is left out (the last piece cut
 * before it), as OpenAI's `stop` ends an answer; undefined when none occurs.
 */
function stopAt(pieces: readonly string[], stop: ChatRequest['stop']): string[] | undefined {
  const stops = (typeof stop === 'string' ? [stop] : (stop ?? [])).filter((s) => s.length > 0);
  const text = pieces.join('');
  const found = stops.map((s) => text.indexOf(s)).filter((at) => at >= 0);
  if (found.length === 0) return undefined;
  const at = Math.min(...found);
  const kept: string[] = [];
  let length = 0;
  for (const piece of pieces) {
    if (length + piece.length > at) {
      if (at > length) kept.push(piece.slice(0, at - length));
      break;
    }
    kept.push(piece);
    length += piece.length;
  }
  return kept;
}

/** The tool `req` calls, if it calls one (see the header). */
function calledTool(req: ChatRequest): ChatTool | undefined {
  const tools = req.tools ?? [];
  const choice = req.tool_choice;
  if (tools.length === 0 || choice === 'none') return undefined;
  if (typeof choice === 'object') return tools.find((t) => t.function.name === choice.function.name);
  if (choice !== 'required' && req.messages.at(-1)?.role === 'tool') return undefined;
  return tools[0];
}

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
    const shaped = req.tools !== undefined || req.response_format !== undefined;
    const identity = JSON.stringify([
      req.model,
      req.messages.map((m) => [m.role, m.content]),
      req.temperature ?? null,
      req.top_p ?? null,
      req.seed ?? null,
      ...(shaped ? [req.tools ?? null, req.tool_choice ?? null, req.response_format ?? null] : []),
    ]);
    const digest = sha256(new TextEncoder().encode(identity));
    const view = new DataView(digest.buffer, digest.byteOffset, digest.byteLength);
    const next = prng(view.getUint32(0));
    const natural = 8 + (view.getUint32(4) % 57);
    const max = requestedMaxTokens(req);
    const tool = calledTool(req);
    const format = req.response_format;
    const json = tool
      ? JSON.stringify(sampleOfSchema(tool.function.parameters ?? { type: 'object' }, next))
      : format?.type === 'json_schema'
        ? JSON.stringify(sampleOfSchema(format.json_schema?.schema ?? { type: 'object' }, next))
        : format?.type === 'json_object'
          ? JSON.stringify(
              sampleOfSchema(schemaInPrompt(req), next) ?? { answer: this.#words(natural, next).join('') },
            )
          : undefined;
    // A text answer is drawn at its truncated length (no mark ends it); JSON is drawn whole and cut.
    const whole = json === undefined ? undefined : jsonPieces(json);
    const length = Math.min(max ?? Number.POSITIVE_INFINITY, whole?.length ?? natural);
    const drawn = whole ? whole.slice(0, length) : this.#words(length, next);
    const stopped = tool ? undefined : stopAt(drawn, req.stop);
    const pieces = stopped ?? drawn;
    const cut = !stopped && length < (whole?.length ?? natural);
    // Drawn after the answer, so asking for them changes nothing else; a tool call has none.
    const logprobs =
      req.logprobs === true && !tool ? logprobsOf(pieces, req.top_logprobs ?? 0, next) : undefined;
    const text = pieces.join('');
    this.#counter++;
    return {
      id: `chatcmpl-${Buffer.from(digest.subarray(8, 20)).toString('hex')}${this.#counter.toString(16)}`,
      created: Math.floor(nowMs / 1000),
      model: req.model,
      pieces,
      text,
      ...(tool
        ? {
            toolCall: {
              id: `call_${Buffer.from(digest.subarray(20, 32)).toString('hex')}`,
              name: tool.function.name,
            },
          }
        : {}),
      ...(logprobs ? { logprobs } : {}),
      promptTokens: countTokens(promptText(req.messages)),
      completionTokens: pieces.length,
      finishReason: cut ? 'length' : tool ? 'tool_calls' : 'stop',
    };
  }

  /** `length` word and punctuation pieces drawn with `next`. */
  #words(length: number, next: () => number): string[] {
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
    return pieces;
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
        message: c.toolCall
          ? {
              role: 'assistant' as const,
              content: null,
              tool_calls: [
                {
                  id: c.toolCall.id,
                  type: 'function',
                  function: { name: c.toolCall.name, arguments: c.text },
                },
              ],
            }
          : { role: 'assistant' as const, content: c.text },
        logprobs: c.logprobs ? { content: c.logprobs, refusal: null } : null,
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
  const call = c.toolCall;
  const frames = [
    chunk([
      {
        index: 0,
        delta: { role: 'assistant', content: call ? null : '' },
        logprobs: null,
        finish_reason: null,
      },
    ]),
  ];
  for (const [i, piece] of c.pieces.entries()) {
    // A tool call's first delta names it; the later ones carry more of its arguments.
    const delta = !call
      ? { content: piece }
      : i === 0
        ? {
            tool_calls: [
              { index: 0, id: call.id, type: 'function', function: { name: call.name, arguments: piece } },
            ],
          }
        : { tool_calls: [{ index: 0, function: { arguments: piece } }] };
    const logprobs = c.logprobs ? { content: [c.logprobs[i]], refusal: null } : null;
    frames.push(chunk([{ index: 0, delta, logprobs, finish_reason: null }]));
  }
  frames.push(chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: c.finishReason }]));
  if (includeUsage) frames.push(chunk([], usageOf(c)));
  frames.push('data: [DONE]\n\n');
  return frames;
}
