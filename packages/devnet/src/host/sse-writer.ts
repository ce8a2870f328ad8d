// The chat/completions answer as Server-Sent Events (devshard-protocol.md §4.4): one `data:` line per
// event, written straight to the socket so the receipt is on the wire before execution starts.
// The writer also carries the stream faults: a cut (socket destroyed mid-stream), a stall (held
// open until the client leaves) and the `slow` fault's waits (ended by `signal` when the client leaves).
import { once } from 'node:events';
import type { FastifyReply } from 'fastify';

export class SseWriter {
  readonly #raw: FastifyReply['raw'];
  #closed = false;
  #cut = false;
  readonly #closedPromise: Promise<void>;
  readonly #gone = new AbortController();

  constructor(reply: FastifyReply) {
    reply.hijack();
    this.#raw = reply.raw;
    const markClosed = () => {
      this.#closed = true;
      this.#gone.abort();
    };
    this.#closedPromise = once(this.#raw, 'close').then(markClosed, markClosed);
    this.#raw.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    this.#raw.socket?.setNoDelay(true);
  }

  /** False once the client is gone or the stream was cut/ended. */
  get open(): boolean {
    return !this.#closed && !this.#cut && !this.#raw.destroyed && !this.#raw.writableEnded;
  }

  /** Aborted once the client has gone (or the socket closed): waits that only serve this client end there. */
  get signal(): AbortSignal {
    return this.#gone.signal;
  }

  /** Writes `data: <json>\n\n`. */
  data(json: string): void {
    if (this.open) this.#raw.write(`data: ${json}\n\n`);
  }

  /** Writes already framed SSE text (model frames end in `\n\n` themselves). */
  raw(frames: string): void {
    if (this.open) this.#raw.write(frames);
  }

  /** Ends the stream, after the `data:` events given (one write for the tail of the stream). */
  end(events: readonly string[] = [], done = false): void {
    if (!this.open) return;
    const tail = events.map((json) => `data: ${json}\n\n`).join('') + (done ? 'data: [DONE]\n\n' : '');
    this.#raw.end(tail);
  }

  /**
   * The `cut-stream` fault: the connection drops mid-body (no final chunk), after what was written
   * so far has reached the client — a FIN after the data, as when a host process dies.
   */
  async cut(): Promise<void> {
    if (this.#cut) return;
    this.#cut = true;
    await new Promise((resolve) => setImmediate(resolve));
    this.#raw.socket?.end();
  }

  /** Resolves when the client has gone (or the server closed the socket): the `stall` fault waits here. */
  closed(): Promise<void> {
    return this.#closedPromise;
  }
}
