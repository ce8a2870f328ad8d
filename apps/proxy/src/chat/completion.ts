// OpenAI response bodies out of host chunk lines (spec §2.7): a non-streamed request gets one
// chat.completion, whether the host sent one `chat.completion` line or a run of chunks, with only
// what the client asked for (response-hygiene.ts).
import { nonNullMember } from './json-bytes.js';
import type { ResponseAsk } from './request-policy.js';
import { cleanCompletionText } from './response-hygiene.js';

interface ToolCall {
  id?: string;
  type?: string;
  function: { name: string; arguments: string };
}

interface Choice {
  index: number;
  role: string;
  content: string;
  reasoning: string | undefined;
  refusal: string | undefined;
  toolCalls: Map<number, ToolCall>;
  /** The tokens' log probabilities, when the client asked for them. */
  logprobs: unknown[] | undefined;
  finishReason: string | null;
}

/** Adds one streamed tool-call delta (OpenAI: by index; id, type and name once, arguments in pieces). */
function addToolCall(calls: Map<number, ToolCall>, delta: Record<string, unknown>): void {
  const index = typeof delta.index === 'number' ? delta.index : calls.size;
  const call = calls.get(index) ?? { function: { name: '', arguments: '' } };
  if (typeof delta.id === 'string') call.id = delta.id;
  if (typeof delta.type === 'string') call.type = delta.type;
  const fn = (delta.function ?? {}) as { name?: unknown; arguments?: unknown };
  if (typeof fn.name === 'string') call.function.name += fn.name;
  if (typeof fn.arguments === 'string') call.function.arguments += fn.arguments;
  calls.set(index, call);
}

export interface Usage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
}

/** A host line's JSON object: its text as the host wrote it, and that text parsed. */
export interface DataFrame {
  readonly json: string;
  readonly value: Record<string, unknown>;
}

/** The `{...}` of a `data: {...}` line, or undefined for anything else. */
export function parseDataLine(line: Uint8Array): DataFrame | undefined {
  const text = Buffer.from(line.buffer, line.byteOffset, line.byteLength).toString('utf8');
  if (!text.startsWith('data:')) return undefined;
  const json = text.slice(5).trim();
  if (!json.startsWith('{')) return undefined;
  try {
    return { json, value: JSON.parse(json) as Record<string, unknown> };
  } catch {
    return undefined;
  }
}

const COMMA = Buffer.from(',');
const OPEN = Buffer.from('[');
const CLOSE = Buffer.from(']');

/** The JSON object of a `data: {...}` line as bytes (no copy), or undefined. */
function objectBytes(line: Uint8Array): Buffer | undefined {
  const b = Buffer.from(line.buffer, line.byteOffset, line.byteLength);
  // 'data:' then optional spaces, then '{'
  if (b.length < 6 || b[0] !== 0x64 || b[4] !== 0x3a) return undefined;
  let i = 5;
  while (b[i] === 0x20 || b[i] === 0x09) i++;
  return b[i] === 0x7b ? b.subarray(i) : undefined;
}

/**
 * The frames of many `data: {...}` lines, parsed as one JSON array (one decode and one parse for a
 * whole answer's chunks, rather than one per chunk); a line that breaks the array is found by
 * parsing the lines one by one. Frames parsed this way carry no text (`json` is empty).
 */
export function parseDataLines(lines: readonly Uint8Array[]): DataFrame[] {
  const parts: Buffer[] = [OPEN];
  for (const line of lines) {
    const bytes = objectBytes(line);
    if (!bytes) continue;
    if (parts.length > 1) parts.push(COMMA);
    parts.push(bytes);
  }
  parts.push(CLOSE);
  try {
    const values = JSON.parse(Buffer.concat(parts).toString('utf8')) as unknown[];
    return values
      .filter((v): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v))
      .map((value) => ({ json: '', value }));
  } catch {
    return lines.map(parseDataLine).filter((f): f is DataFrame => f !== undefined);
  }
}

/** Usage carried by a chunk or completion object, if any. */
export function usageOf(frame: Record<string, unknown> | undefined): Usage | undefined {
  const usage = frame?.usage;
  return usage && typeof usage === 'object' ? (usage as Usage) : undefined;
}

/** Searched as bytes: a string needle is re-read on every call, and this runs once per chunk. */
const USAGE_KEY = Buffer.from('"usage"');

/** The usage a stream chunk carries, parsing only a chunk that may carry one. */
export function streamChunkUsage(line: Uint8Array): Usage | undefined {
  const bytes = Buffer.from(line.buffer, line.byteOffset, line.byteLength);
  // OpenAI-style chunks of a stream with include_usage all say `"usage":null` but the last one: those
  // need no parse. Anything else that mentions usage is parsed (a token whose text is "usage" too).
  return nonNullMember(bytes, USAGE_KEY) ? usageOf(parseDataLine(line)?.value) : undefined;
}

const NOTHING_ASKED: ResponseAsk = { logprobs: false, topLogprobs: 0, includeUsage: false };

/**
 * The chat.completion JSON of a non-streamed answer. A host that sent one `chat.completion` line
 * gets its text passed on as it came (parsed once, to check it, never serialized again) unless
 * it carries what the client did not ask for; chunks are assembled into one, with the
 * tokens' log probabilities when the client asked for them.
 */
export function assembleCompletion(
  frames: readonly DataFrame[],
  fallback: { id: string; model: string },
  ask: ResponseAsk = NOTHING_ASKED,
): string {
  const whole = frames.find((f) => f.value.object === 'chat.completion');
  if (whole) return cleanCompletionText(whole.json || JSON.stringify(whole.value), whole.value, ask);
  const choices = new Map<number, Choice>();
  let usage: Usage | undefined;
  let id = fallback.id;
  let model = fallback.model;
  let created = Math.floor(Date.now() / 1000);
  for (const { value: f } of frames) {
    if (typeof f.id === 'string') id = f.id;
    if (typeof f.model === 'string') model = f.model;
    if (typeof f.created === 'number') created = f.created;
    usage = usageOf(f) ?? usage;
    for (const c of (f.choices as Array<Record<string, unknown>> | undefined) ?? []) {
      const index = typeof c.index === 'number' ? c.index : 0;
      const choice = choices.get(index) ?? {
        index,
        role: 'assistant',
        content: '',
        reasoning: undefined,
        refusal: undefined,
        toolCalls: new Map(),
        logprobs: undefined,
        finishReason: null,
      };
      const delta = (c.delta ?? {}) as Record<string, unknown>;
      if (typeof delta.role === 'string') choice.role = delta.role;
      if (typeof delta.content === 'string') choice.content += delta.content;
      if (typeof delta.reasoning_content === 'string')
        choice.reasoning = (choice.reasoning ?? '') + delta.reasoning_content;
      if (typeof delta.refusal === 'string') choice.refusal = (choice.refusal ?? '') + delta.refusal;
      if (Array.isArray(delta.tool_calls)) {
        for (const t of delta.tool_calls)
          if (t && typeof t === 'object') addToolCall(choice.toolCalls, t as Record<string, unknown>);
      }
      if (ask.logprobs) addLogprobs(choice, c.logprobs, ask.topLogprobs);
      if (typeof c.finish_reason === 'string') choice.finishReason = c.finish_reason;
      choices.set(index, choice);
    }
  }
  return JSON.stringify({
    id,
    object: 'chat.completion',
    created,
    model,
    choices: [...choices.values()].map((c) => ({
      index: c.index,
      message: {
        role: c.role,
        // OpenAI: null content when the answer is only tool calls.
        content: c.content === '' && c.toolCalls.size > 0 ? null : c.content,
        ...(c.reasoning !== undefined ? { reasoning_content: c.reasoning } : {}),
        ...(c.refusal !== undefined ? { refusal: c.refusal } : {}),
        ...(c.toolCalls.size > 0
          ? {
              tool_calls: [...c.toolCalls.entries()]
                .sort((a, b) => a[0] - b[0])
                .map(([, t]) => ({ id: t.id, type: t.type ?? 'function', function: t.function })),
            }
          : {}),
      },
      ...(ask.logprobs ? { logprobs: c.logprobs ? { content: c.logprobs, refusal: null } : null } : {}),
      finish_reason: c.finishReason,
    })),
    ...(usage ? { usage } : {}),
  });
}

/** A chunk's token log probabilities added to its choice, each cut to the `top_logprobs` asked. */
function addLogprobs(choice: Choice, logprobs: unknown, keep: number): void {
  const content = (logprobs as { content?: unknown } | null | undefined)?.content;
  if (!Array.isArray(content)) return;
  choice.logprobs ??= [];
  for (const token of content) {
    const t = token as { top_logprobs?: unknown };
    choice.logprobs.push(
      Array.isArray(t?.top_logprobs) && t.top_logprobs.length > keep
        ? { ...t, top_logprobs: t.top_logprobs.slice(0, keep) }
        : token,
    );
  }
}
