// The chat/completions SSE stream as typed events (devshard-protocol.md §4.4): the devshard receipt,
// OpenAI chunks (kept as the exact line bytes so the proxy forwards them unmodified), the devshard
// meta event with the host's mempool, and [DONE]. Comments, `event:`, `id:`, `retry:` and blank lines
// are ignored. How the stream ends decides success: EOF before a receipt and before [DONE] is a
// truncated stream; EOF after the receipt but before [DONE] on a send with a payload is a truncated
// execution (the reference counts the receipt as a terminator; we also want the Finish, §7.2).
import { isDevshardError } from '../errors.js';
import { parseJsonLossless } from '../json/lossless.js';
import { type DevshardEvent, decodeDevshardEvent } from '../json/wire.js';
import { HostErrorCode, HostTransportError } from './errors.js';
import type { ChatEvent } from './types.js';

const DATA = new TextEncoder().encode('data:');
const DONE = '[DONE]';
const decoder = new TextDecoder();
// Protocol events are recognised by their top-level key; a chat chunk whose text merely mentions the
// key still parses as `other` and is forwarded.
const PROTOCOL_KEYS = [Buffer.from('"devshard_receipt"'), Buffer.from('"devshard_meta"')];

function startsWith(line: Uint8Array, prefix: Uint8Array): boolean {
  if (line.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (line[i] !== prefix[i]) return false;
  return true;
}

function mentionsProtocolKey(data: Uint8Array): boolean {
  const view = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return PROTOCOL_KEYS.some((k) => view.includes(k));
}

/** The event of one line, or undefined for lines to ignore. Throws `malformed` for a bad protocol event. */
export function classifyLine(line: Uint8Array): ChatEvent | undefined {
  if (!startsWith(line, DATA)) return undefined;
  let offset = DATA.length;
  if (line[offset] === 0x20) offset++;
  const data = line.subarray(offset);
  if (data.length === DONE.length && decoder.decode(data) === DONE) return { type: 'done', line };
  if (!mentionsProtocolKey(data)) return { type: 'chunk', line };
  const text = decoder.decode(data);
  try {
    parseJsonLossless(text);
  } catch {
    return { type: 'chunk', line }; // not JSON: an ordinary data line, forwarded as is
  }
  let event: DevshardEvent;
  try {
    event = decodeDevshardEvent(text);
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

/**
 * Events of a chat stream from its lines, ending with the truncation rules above. `payloadSent`
 * says whether the request carried an inference payload.
 */
export async function* chatEvents(
  lines: AsyncIterable<Uint8Array>,
  payloadSent: boolean,
): AsyncGenerator<ChatEvent, void, undefined> {
  let sawReceipt = false;
  let sawDone = false;
  for await (const line of lines) {
    const event = classifyLine(line);
    if (!event) continue;
    if (event.type === 'receipt') sawReceipt = true;
    if (event.type === 'done') sawDone = true;
    yield event;
  }
  if (!sawReceipt && !sawDone) {
    throw new HostTransportError(HostErrorCode.Truncated, 'stream ended before the receipt and [DONE]');
  }
  if (payloadSent && !sawDone) {
    throw new HostTransportError(
      HostErrorCode.TruncatedExecution,
      'stream ended after the receipt, before [DONE]',
    );
  }
}
