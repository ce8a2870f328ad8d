// The chat/completions SSE stream as typed events (devshard-protocol.md §4.4): the devshard receipt,
// OpenAI chunks (kept as the exact line bytes so the proxy forwards them unmodified), the devshard
// meta event with the host's mempool, and [DONE]. Comments, `event:`, `id:`, `retry:` and blank lines
// are ignored. How the stream ends decides success: EOF before a receipt and before [DONE] is a
// truncated stream; EOF after the receipt but before [DONE] on a send with a payload is a truncated
// execution (the reference counts the receipt as a terminator; we also want the Finish, §7.2).
import { isDevshardError } from '../errors.js';
import { type JsonValue, parseJsonLossless } from '../json/lossless.js';
import { type DevshardEvent, devshardEventOf } from '../json/wire.js';
import { HostErrorCode, HostTransportError } from './errors.js';
import type { ChatEvent } from './types.js';

const DATA = new TextEncoder().encode('data:');
const DONE = new TextEncoder().encode('[DONE]');
const decoder = new TextDecoder();
// Protocol events are recognised by their top-level key; a chat chunk whose text merely mentions the
// key still parses as `other` and is forwarded. Both keys share one prefix, so a line is scanned once
// for it and the rest compared where it occurs: every chunk line of an answer goes through this.
const PROTOCOL_PREFIX = Buffer.from('"devshard_');
const PROTOCOL_RESTS = [Buffer.from('receipt"'), Buffer.from('meta"')];

/** Whether `line` holds `prefix` at `offset`. */
function holdsAt(line: Uint8Array, prefix: Uint8Array, offset: number): boolean {
  if (line.length < offset + prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (line[offset + i] !== prefix[i]) return false;
  return true;
}

/** Searched in place from `offset`: lines from undici are Buffers already, no view per line. */
function mentionsProtocolKey(line: Uint8Array, offset: number): boolean {
  const view = line instanceof Buffer ? line : Buffer.from(line.buffer, line.byteOffset, line.byteLength);
  for (
    let at = view.indexOf(PROTOCOL_PREFIX, offset);
    at !== -1;
    at = view.indexOf(PROTOCOL_PREFIX, at + 1)
  ) {
    const rest = at + PROTOCOL_PREFIX.length;
    for (const key of PROTOCOL_RESTS) if (holdsAt(view, key, rest)) return true;
  }
  return false;
}

/** The event of one line, or undefined for lines to ignore. Throws `malformed` for a bad protocol event. */
export function classifyLine(line: Uint8Array): ChatEvent | undefined {
  if (!holdsAt(line, DATA, 0)) return undefined;
  let offset = DATA.length;
  if (line[offset] === 0x20) offset++;
  if (line.length - offset === DONE.length && holdsAt(line, DONE, offset)) return { type: 'done', line };
  if (!mentionsProtocolKey(line, offset)) return { type: 'chunk', line };
  const data = line.subarray(offset);
  let value: JsonValue;
  try {
    value = parseJsonLossless(decoder.decode(data));
  } catch {
    return { type: 'chunk', line }; // not JSON: an ordinary data line, forwarded as is
  }
  // Parsed once: the receipt and meta lines carry the base64 mempool, the longest text of the stream.
  let event: DevshardEvent;
  try {
    event = devshardEventOf(value);
  } catch (error) {
    // JSON whose receipt/meta shape is wrong (bad base64, integer out of range): the host's fault.
    if (error instanceof SyntaxError || isDevshardError(error)) {
      throw new HostTransportError(HostErrorCode.Malformed, `protocol event: ${(error as Error).message}`, {
        cause: error,
      });
    }
    throw error;
  }
  if (event.type === 'receipt') return { type: 'receipt', receipt: event.event };
  if (event.type === 'meta') return { type: 'meta', meta: event.event };
  return { type: 'chunk', line };
}

/** What a chat stream has shown so far, and whether its end is a truncation (the rules above). */
export class ChatStreamEnd {
  sawReceipt = false;
  sawDone = false;

  /** `payloadSent`: the request carried an inference payload. */
  constructor(private readonly payloadSent: boolean) {}

  see(event: ChatEvent): void {
    if (event.type === 'receipt') this.sawReceipt = true;
    else if (event.type === 'done') this.sawDone = true;
  }

  /** At EOF: throws the truncation the stream's end amounts to, if any. */
  check(): void {
    if (!this.sawReceipt && !this.sawDone) {
      throw new HostTransportError(HostErrorCode.Truncated, 'stream ended before the receipt and [DONE]');
    }
    if (this.payloadSent && !this.sawDone) {
      throw new HostTransportError(
        HostErrorCode.TruncatedExecution,
        'stream ended after the receipt, before [DONE]',
      );
    }
  }
}

/**
 * Events of a chat stream from its lines, ending with the truncation rules above. `payloadSent`
 * says whether the request carried an inference payload.
 */
export async function* chatEvents(
  lines: AsyncIterable<Uint8Array>,
  payloadSent: boolean,
): AsyncGenerator<ChatEvent, void, undefined> {
  const end = new ChatStreamEnd(payloadSent);
  for await (const line of lines) {
    const event = classifyLine(line);
    if (!event) continue;
    end.see(event);
    yield event;
  }
  end.check();
}
