// One request to a host and its answer, on undici's handler API (`Dispatcher.dispatch` with the
// undici 7 controller handler: onRequestStart / onResponseStart / onResponseData / onResponseEnd /
// onResponseError). The status settles `opened`; body chunks are queued as they arrive and taken
// synchronously by the reader (the SSE line splitter, a bounded JSON buffer). Under undici's
// `request` each call also builds a BodyReadable, its async iterator, an AbortController and their
// stream events: ~330 µs of node stream/event machinery per proxied request.
//
// One deadline and one cancellation per call (devshard-protocol.md §4.5): the transport's timer, the
// caller's AbortSignal (listened to only when given) and `cancel()` stop the request with a
// HostTransportError saying which one fired (`timeout` / `aborted`), so a failed call maps to those
// rather than to a bare network error. undici's own connect/headers/body-idle timeouts stay those of
// the dispatcher and surface as transport failures, as before.
import type { Dispatcher } from 'undici';
import { HostErrorCode, HostTransportError, hostStatusError } from './errors.js';

/** Of a non-200 answer's body at most this much is kept (it reaches logs, not the user). */
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/**
 * Received but unread body bytes at which the host is paused until the reader catches up (undici's
 * BodyReadable highWaterMark): a consumer slower than the host holds the socket, not our memory.
 */
const HIGH_WATER_BYTES = 64 * 1024;

/** What the exchange can tell the sender of the bytes: undici's controller, or a fetch pump. */
export interface ResponseSource {
  abort(reason: Error): void;
  pause(): void;
  resume(): void;
}

type Phase = 'head' | 'error-body' | 'body' | 'ended' | 'failed';

export class HostExchange {
  /** Resolves when a 200's head is in; rejects with the call's HostTransportError otherwise. */
  readonly opened: Promise<void>;
  /** The 200 answer's content-type, lowercased ('' when absent). */
  contentType = '';

  #phase: Phase = 'head';
  #resolveOpened!: () => void;
  #rejectOpened!: (error: HostTransportError) => void;
  #source: ResponseSource | undefined;
  /** Why we stopped the call ourselves (deadline, caller, cancel), when we did. */
  #stoppedBy: HostTransportError | undefined;
  /** The error the body ended with, when it did not end cleanly. */
  #failure: unknown;
  #queue: Uint8Array[] = [];
  #queuedBytes = 0;
  #paused = false;
  #wake: (() => void) | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #errorStatus = 0;
  #hostError: string | undefined;
  #errorParts: Uint8Array[] = [];
  #errorBytes = 0;
  readonly #onCallerAbort: (() => void) | undefined;

  /**
   * `what` names the call in stop reasons (`chat 7`), `route` in status and network errors; the
   * deadline counts from now.
   */
  constructor(
    private readonly what: string,
    readonly route: string,
    timeoutMs: number,
    private readonly signal?: AbortSignal,
  ) {
    this.opened = new Promise<void>((resolve, reject) => {
      this.#resolveOpened = resolve;
      this.#rejectOpened = reject;
    });
    this.#timer = setTimeout(
      () =>
        this.#stop(new HostTransportError(HostErrorCode.Timeout, `${what}: no answer in ${timeoutMs} ms`)),
      timeoutMs,
    );
    // A stream nobody reads must not keep the process alive for 30 minutes.
    this.#timer.unref?.();
    if (signal) {
      this.#onCallerAbort = () =>
        this.#stop(new HostTransportError(HostErrorCode.Aborted, `${what}: aborted by the caller`));
      if (signal.aborted) this.#onCallerAbort();
      else signal.addEventListener('abort', this.#onCallerAbort, { once: true });
    }
  }

  // --- undici DispatchHandler (controller API) ---

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.attach(controller);
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    this.receiveHead(
      statusCode,
      headerText(headers['content-type']),
      headerText(headers['x-devshard-error']),
    );
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.receiveData(chunk);
  }

  onResponseEnd(): void {
    this.receiveEnd();
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    this.receiveError(error);
  }

  // --- what any source feeds (undici above, the fetch pump) ---

  /** The source of this call's answer; a call already stopped is aborted at once. */
  attach(source: ResponseSource): void {
    this.#source = source;
    if (this.#stoppedBy) source.abort(this.#stoppedBy);
  }

  receiveHead(status: number, contentType: string | undefined, hostError: string | undefined): void {
    if (this.#phase !== 'head' || status < 200) return; // 1xx: the real head follows
    if (status !== 200) {
      this.#phase = 'error-body';
      this.#errorStatus = status;
      this.#hostError = hostError;
      return;
    }
    this.#phase = 'body';
    this.contentType = (contentType ?? '').toLowerCase();
    this.#resolveOpened();
  }

  receiveData(chunk: Uint8Array): void {
    if (this.#phase === 'body') {
      this.#queue.push(chunk);
      this.#queuedBytes += chunk.length;
      if (this.#queuedBytes >= HIGH_WATER_BYTES && !this.#paused) {
        this.#paused = true;
        this.#source?.pause();
      }
      this.#notify();
    } else if (this.#phase === 'error-body') {
      this.#errorParts.push(chunk);
      this.#errorBytes += chunk.length;
      // The rest is not read: the status is what the caller needs.
      if (this.#errorBytes >= MAX_ERROR_BODY_BYTES) {
        this.#rejectWithStatus();
        this.#source?.abort(
          new HostTransportError(HostErrorCode.Aborted, `${this.what}: error body skipped`),
        );
      }
    }
  }

  receiveEnd(): void {
    if (this.#phase === 'error-body') this.#rejectWithStatus();
    else if (this.#phase === 'body') {
      this.#phase = 'ended';
      this.#release();
      this.#notify();
    } else if (this.#phase === 'head') {
      // A source that ends before any final status: a broken answer, not an empty success.
      this.receiveError(new Error('answer ended before its status'));
    }
  }

  receiveError(error: unknown): void {
    if (this.#phase === 'ended' || this.#phase === 'failed') return;
    if (this.#phase === 'error-body') {
      // A broken error body still leaves the status to report.
      this.#rejectWithStatus();
      return;
    }
    const opened = this.#phase === 'body';
    this.#phase = 'failed';
    this.#failure = error;
    this.#release();
    if (opened) this.#notify();
    else this.#rejectOpened(this.failureOf(error, this.route));
  }

  // --- the reader's side ---

  /** The chunks received since the last take (resuming a paused host), or undefined when none. */
  take(): Uint8Array[] | undefined {
    if (this.#queuedBytes === 0 && this.#queue.length === 0) return undefined;
    const chunks = this.#queue;
    this.#queue = [];
    this.#queuedBytes = 0;
    if (this.#paused) {
      this.#paused = false;
      // May deliver more data at once (undici parses what the socket holds): it goes to the new queue.
      this.#source?.resume();
    }
    return chunks;
  }

  /**
   * Where the body stands once `take` answered undefined: 'open' (call `wait`), 'ended', or it
   * throws the error the body broke with. A body the host or the network broke is read to its last
   * received chunk first (a receipt that arrived still counts, §4.4); a call we stopped ourselves
   * has nothing left to take.
   */
  settled(): 'open' | 'ended' {
    if (this.#stoppedBy) throw this.#stoppedBy;
    if (this.#phase === 'failed') throw this.#failure;
    return this.#phase === 'ended' ? 'ended' : 'open';
  }

  /** Resolves once more body, the end or a failure has arrived. */
  wait(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#wake = resolve;
    });
  }

  /** Stops the call with `aborted` (we stopped reading); nothing once the answer is complete. */
  cancel(detail: string): void {
    this.#stop(new HostTransportError(HostErrorCode.Aborted, `${this.what}: ${detail}`));
  }

  /** The error to report for `error` raised while this call was read. */
  failureOf(error: unknown, label: string): HostTransportError {
    if (this.#stoppedBy) return this.#stoppedBy;
    if (error instanceof HostTransportError) return error;
    const message = error instanceof Error ? error.message : String(error);
    return new HostTransportError(HostErrorCode.Network, `${label}: ${message}`, { cause: error });
  }

  /** Set when the deadline, the caller or `cancel` stopped the call. */
  get stoppedBy(): HostTransportError | undefined {
    return this.#stoppedBy;
  }

  #stop(reason: HostTransportError): void {
    if (this.#phase === 'ended' || this.#phase === 'failed') return;
    this.#stoppedBy = reason;
    // What was received and not read is dropped: the reader stops at its next step.
    this.#queue = [];
    this.#queuedBytes = 0;
    // undici may report the abort back through onResponseError; the phase below makes that a no-op.
    this.receiveError(reason);
    this.#source?.abort(reason);
  }

  #rejectWithStatus(): void {
    this.#phase = 'failed';
    this.#release();
    const text = Buffer.concat(this.#errorParts, this.#errorBytes)
      .subarray(0, MAX_ERROR_BODY_BYTES)
      .toString('utf8');
    this.#errorParts = [];
    this.#rejectOpened(hostStatusError(this.route, this.#errorStatus, this.#hostError, text));
  }

  /** The deadline and the caller's listener end with the answer. */
  #release(): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#onCallerAbort) this.signal?.removeEventListener('abort', this.#onCallerAbort);
  }

  #notify(): void {
    const wake = this.#wake;
    if (wake !== undefined) {
      this.#wake = undefined;
      wake();
    }
  }
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/** Reads the whole body, refusing more than `maxBytes` (`body_too_large`). */
export async function readWholeBody(exchange: HostExchange, maxBytes: number): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  let length = 0;
  for (;;) {
    const chunks = exchange.take();
    if (chunks !== undefined) {
      for (const chunk of chunks) {
        length += chunk.length;
        if (length > maxBytes) {
          throw new HostTransportError(HostErrorCode.BodyTooLarge, `body exceeds ${maxBytes} bytes`);
        }
        parts.push(chunk);
      }
    } else if (exchange.settled() === 'ended') {
      return Buffer.concat(parts, length);
    } else {
      await exchange.wait();
    }
  }
}

/**
 * Runs a call through `fetch` (the transport's `fetch` option: tests, proxies) into `exchange`, with
 * the same pause/resume and abort as the undici path.
 */
export function fetchInto(
  exchange: HostExchange,
  fetchFn: typeof fetch,
  url: string,
  init: { method: string; headers: Record<string, string>; body?: Uint8Array },
): void {
  const controller = new AbortController();
  let paused = false;
  let resume: (() => void) | undefined;
  const wakeUp = () => {
    paused = false;
    const r = resume;
    resume = undefined;
    r?.();
  };
  exchange.attach({
    abort(reason) {
      controller.abort(reason);
      wakeUp();
    },
    pause() {
      paused = true;
    },
    resume: wakeUp,
  });
  void (async () => {
    try {
      const res = await fetchFn(url, { ...init, signal: controller.signal });
      exchange.receiveHead(
        res.status,
        res.headers.get('content-type') ?? undefined,
        res.headers.get('x-devshard-error') ?? undefined,
      );
      if (res.body) {
        for await (const chunk of res.body) {
          exchange.receiveData(chunk);
          while (paused && !controller.signal.aborted) {
            await new Promise<void>((r) => {
              resume = r;
            });
          }
          if (controller.signal.aborted) break;
        }
      }
      exchange.receiveEnd();
    } catch (error) {
      exchange.receiveError(error);
    }
  })();
}
