// What one host chunk line (`data: {...}`, devshard-protocol.md §4.4) means to the client, decided
// once per line: content (the answer has started), preamble (a chunk without content yet, e.g. the
// role-only first delta), or an error event (`data: {"error": …}`, which a host emits instead of an
// answer). An error event is deterministic when its status says the request itself is bad (it
// would fail on every host: context too long, invalid tool JSON) and transient otherwise.

/** Statuses a model server gives a request that would fail the same way everywhere. */
const DETERMINISTIC = new Set([400, 404, 413, 422]);

import type { DataFrame } from '../chat/completion.js';

/** Content and preamble lines keep their parse (`frame`), so a completion is assembled without a second one. */
export type HostLine =
  | { readonly kind: 'content'; readonly frame: DataFrame }
  | { readonly kind: 'preamble'; readonly frame?: DataFrame }
  | {
      readonly kind: 'error';
      readonly status: number;
      readonly message: string;
      readonly deterministic: boolean;
    };

const PREAMBLE: HostLine = { kind: 'preamble' };
const ERROR_KEY = Buffer.from('"error"');

/** The JSON text of a `data:` line, or undefined. */
function payloadOf(line: Uint8Array): string | undefined {
  const text = Buffer.from(line.buffer, line.byteOffset, line.byteLength).toString('utf8');
  if (!text.startsWith('data:')) return undefined;
  const json = text.slice(5).trim();
  return json.startsWith('{') ? json : undefined;
}

/**
 * True when the line may be an error event: checked as bytes, so a content chunk costs no parse.
 * Lines from undici are Buffers already: searched in place, no view made per line.
 */
export function mayBeError(line: Uint8Array): boolean {
  const bytes = line instanceof Buffer ? line : Buffer.from(line.buffer, line.byteOffset, line.byteLength);
  return bytes.indexOf(ERROR_KEY) !== -1;
}

function nonEmpty(value: unknown): boolean {
  if (typeof value === 'string') return value.length > 0;
  if (Array.isArray(value)) return value.length > 0;
  return value !== null && typeof value === 'object';
}

/** Whether a chunk's delta or a completion's message carries anything a client would show. */
function carriesContent(part: Record<string, unknown> | undefined): boolean {
  if (!part) return false;
  return (
    nonEmpty(part.content) ||
    nonEmpty(part.tool_calls) ||
    nonEmpty(part.function_call) ||
    nonEmpty(part.refusal) ||
    nonEmpty(part.reasoning_content) ||
    nonEmpty(part.reasoning)
  );
}

function errorLine(error: unknown, top: Record<string, unknown>): HostLine {
  const e = (error && typeof error === 'object' ? error : {}) as Record<string, unknown>;
  const numeric = [e.status, top.status, e.code].find((v) => typeof v === 'number' && v >= 400 && v < 600);
  const status = typeof numeric === 'number' ? numeric : e.type === 'invalid_request_error' ? 400 : 500;
  const message = typeof e.message === 'string' ? e.message : typeof error === 'string' ? error : '';
  return { kind: 'error', status, message: message.slice(0, 500), deterministic: DETERMINISTIC.has(status) };
}

/** Classifies one host chunk line (parses it once). */
export function classifyHostLine(line: Uint8Array): HostLine {
  const json = payloadOf(line);
  if (json === undefined) return PREAMBLE;
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return PREAMBLE;
  }
  if (value === null || typeof value !== 'object') return PREAMBLE;
  if ('error' in value && value.error !== null && value.choices === undefined)
    return errorLine(value.error, value);
  const frame: DataFrame = { json, value };
  const choices = value.choices;
  if (!Array.isArray(choices)) return { kind: 'preamble', frame };
  for (const c of choices as Array<Record<string, unknown>>) {
    if (!c || typeof c !== 'object') continue;
    if (
      carriesContent(c.delta as Record<string, unknown> | undefined) ||
      carriesContent(c.message as Record<string, unknown> | undefined) ||
      nonEmpty(c.text)
    ) {
      return { kind: 'content', frame };
    }
  }
  return { kind: 'preamble', frame };
}
