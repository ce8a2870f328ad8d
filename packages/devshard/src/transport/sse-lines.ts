// Splits a response body into lines at byte level (devshard-protocol.md §4.4: "read line by line,
// lines may exceed 1 MiB"). Bytes stay bytes, so an OpenAI chunk line can be forwarded exactly as it
// arrived; a line longer than `maxLineBytes` aborts the read instead of growing without bound (a host
// could otherwise stream forever without a newline) or being silently cut (which would mis-parse a
// protocol event). Lines end in "\n"; a "\r" before it is dropped, like the reference reader.

import { concat } from '@gonka-gateway/chain';
import { HostErrorCode, HostTransportError } from './errors.js';

const LF = 0x0a;
const CR = 0x0d;

const joined = (parts: readonly Uint8Array[]): Uint8Array => (parts.length === 1 ? parts[0]! : concat(parts));

function withoutCr(line: Uint8Array): Uint8Array {
  return line.length > 0 && line[line.length - 1] === CR ? line.subarray(0, line.length - 1) : line;
}

/**
 * Yields each line without its terminator; a last line without "\n" is yielded at EOF. The yielded
 * arrays may be views into the received chunks: copy before mutating.
 */
export async function* readLines(
  chunks: AsyncIterable<Uint8Array>,
  maxLineBytes: number,
): AsyncGenerator<Uint8Array, void, undefined> {
  let parts: Uint8Array[] = [];
  let pending = 0;
  const tooLarge = () =>
    new HostTransportError(HostErrorCode.LineTooLarge, `SSE line exceeds ${maxLineBytes} bytes`);
  for await (const chunk of chunks) {
    let start = 0;
    for (;;) {
      const end = chunk.indexOf(LF, start);
      if (end === -1) break;
      const piece = chunk.subarray(start, end);
      // The limit counts the line without "\n"; a trailing "\r" is allowed on top of it.
      if (pending + piece.length > maxLineBytes + 1) throw tooLarge();
      const line = pending === 0 ? piece : joined([...parts, piece]);
      parts = [];
      pending = 0;
      const clean = withoutCr(line);
      if (clean.length > maxLineBytes) throw tooLarge();
      yield clean;
      start = end + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      pending += rest.length;
      if (pending > maxLineBytes + 1) throw tooLarge();
      parts.push(rest);
    }
  }
  if (pending > 0) {
    const clean = withoutCr(joined(parts));
    if (clean.length > maxLineBytes) throw tooLarge();
    yield clean;
  }
}
