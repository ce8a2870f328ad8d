// Response hygiene (apps/proxy README "Request policy"): the client gets what OpenAI's chat API
// defines for what it asked, not what a host added for its own needs. Removed from every chunk and
// completion: token ids (`token_ids`, `prompt_token_ids`, which some engines return), `logprobs`
// when the client did not ask for them (a host may compute them for validation), top log
// probabilities beyond the `top_logprobs` asked, and in a stream `usage` unless the client set
// `stream_options.include_usage` (then OpenAI's final usage chunk is passed on as it came).
// A chunk that needs none of this is recognised as bytes and passed on untouched: no parse.
import { nonNullMember } from './json-bytes.js';
import type { ResponseAsk } from './request-policy.js';

const TOKEN_IDS = Buffer.from('token_ids"');
const LOGPROBS = Buffer.from('"logprobs"');
const USAGE = Buffer.from('"usage"');
const PREFIX = 'data: ';

type Frame = Record<string, unknown>;

/** Whether a chunk line may carry something the client did not ask for. */
function needsCleaning(bytes: Buffer, ask: ResponseAsk, streamed: boolean): boolean {
  if (bytes.includes(TOKEN_IDS)) return true;
  if (nonNullMember(bytes, LOGPROBS)) return true;
  return streamed && !ask.includeUsage && nonNullMember(bytes, USAGE);
}

/**
 * The chunk line (`data: {...}`) the client is sent, or undefined when nothing of it is left for
 * the client (a usage-only chunk it did not ask for).
 */
export function cleanChunkLine(line: Uint8Array, ask: ResponseAsk): Uint8Array | undefined {
  const bytes = Buffer.from(line.buffer, line.byteOffset, line.byteLength);
  if (!needsCleaning(bytes, ask, true)) return line;
  const text = bytes.toString('utf8');
  if (!text.startsWith('data:')) return line;
  let frame: unknown;
  try {
    frame = JSON.parse(text.slice(5));
  } catch {
    return line;
  }
  if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) return line;
  const f = frame as Frame;
  const usageOnly = Array.isArray(f.choices) && f.choices.length === 0 && f.usage != null;
  cleanFrame(f, ask);
  if (!ask.includeUsage) {
    if (usageOnly) return undefined;
    delete f.usage;
  }
  return Buffer.from(PREFIX + JSON.stringify(f));
}

/** A host's whole `chat.completion` JSON text, cleaned the same way (its usage stays: OpenAI's). */
export function cleanCompletionText(json: string, value: Frame, ask: ResponseAsk): string {
  if (!needsCleaning(Buffer.from(json), ask, false)) return json;
  const copy = structuredClone(value);
  cleanFrame(copy, ask);
  return JSON.stringify(copy);
}

function cleanFrame(f: Frame, ask: ResponseAsk): void {
  delete f.prompt_token_ids;
  delete f.token_ids;
  if (!Array.isArray(f.choices)) return;
  for (const c of f.choices) {
    if (typeof c !== 'object' || c === null) continue;
    const choice = c as Frame;
    delete choice.token_ids;
    delete choice.prompt_token_ids;
    if (choice.logprobs === undefined || choice.logprobs === null) continue;
    if (!ask.logprobs) choice.logprobs = null;
    else trimTopLogprobs(choice.logprobs, ask.topLogprobs);
  }
}

/** Each token's `top_logprobs` cut to the number asked (OpenAI returns exactly that many). */
function trimTopLogprobs(logprobs: unknown, keep: number): void {
  if (typeof logprobs !== 'object' || logprobs === null) return;
  for (const list of [(logprobs as Frame).content, (logprobs as Frame).refusal]) {
    if (!Array.isArray(list)) continue;
    for (const token of list) {
      if (typeof token !== 'object' || token === null) continue;
      const t = token as Frame;
      if (Array.isArray(t.top_logprobs) && t.top_logprobs.length > keep)
        t.top_logprobs = t.top_logprobs.slice(0, keep);
    }
  }
}
