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
 * The same splitting as a synchronous cursor: `feed` one received chunk, take its lines with `next`
 * until it answers undefined, then feed the next chunk; `end` gives the last unterminated line. The
 * chat stream reads its lines through this directly, so a line costs no async-iteration step of its
 * own (two generator layers per line were ~1 µs each, ~140 lines per 64-token answer). The returned
 * arrays may be views into the fed chunks: copy before mutating.
 */
export class LineSplitter {
  #parts: Uint8Array[] = [];
  #pending = 0;
  #chunk: Uint8Array | undefined;
  #start = 0;

  constructor(private readonly maxLineBytes: number) {}

  #tooLarge(): HostTransportError {
    return new HostTransportError(HostErrorCode.LineTooLarge, `SSE line exceeds ${this.maxLineBytes} bytes`);
  }

  feed(chunk: Uint8Array): void {
    this.#chunk = chunk;
    this.#start = 0;
  }

  /** The next complete line of the fed chunk, or undefined once it holds no more "\n". */
  next(): Uint8Array | undefined {
    const chunk = this.#chunk;
    if (chunk === undefined) return undefined;
    const start = this.#start;
    const end = chunk.indexOf(LF, start);
    if (end === -1) {
      // The rest of the chunk waits for its "\n" in the next one.
      this.#chunk = undefined;
      if (start < chunk.length) {
        this.#pending += chunk.length - start;
        if (this.#pending > this.maxLineBytes + 1) throw this.#tooLarge();
        this.#parts.push(chunk.subarray(start));
      }
      return undefined;
    }
    const piece = chunk.subarray(start, end);
    // The limit counts the line without "\n"; a trailing "\r" is allowed on top of it.
    if (this.#pending + piece.length > this.maxLineBytes + 1) throw this.#tooLarge();
    let line = piece;
    if (this.#pending !== 0) {
      this.#parts.push(piece);
      line = joined(this.#parts);
      this.#parts = [];
      this.#pending = 0;
    }
    this.#start = end + 1;
    const clean = withoutCr(line);
    if (clean.length > this.maxLineBytes) throw this.#tooLarge();
    return clean;
  }

  /** At EOF: the last line when it had no "\n", else undefined. */
  end(): Uint8Array | undefined {
    if (this.#pending === 0) return undefined;
    const clean = withoutCr(joined(this.#parts));
    this.#parts = [];
    this.#pending = 0;
    if (clean.length > this.maxLineBytes) throw this.#tooLarge();
    return clean;
  }
}

/**
 * Yields each line without its terminator; a last line without "\n" is yielded at EOF. The yielded
 * arrays may be views into the received chunks: copy before mutating.
 */
export async function* readLines(
  chunks: AsyncIterable<Uint8Array>,
  maxLineBytes: number,
): AsyncGenerator<Uint8Array, void, undefined> {
  const splitter = new LineSplitter(maxLineBytes);
  for await (const chunk of chunks) {
    splitter.feed(chunk);
    for (let line = splitter.next(); line !== undefined; line = splitter.next()) yield line;
  }
  const last = splitter.end();
  if (last !== undefined) yield last;
}
