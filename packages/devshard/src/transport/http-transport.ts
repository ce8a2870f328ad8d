// HostTransport over HTTP with undici's dispatcher API on a keep-alive connection pool (one Agent per
// transport; bodies read as they arrive, host-exchange.ts). It skips fetch's WHATWG layers (Request,
// Headers, web streams: 1.3–1.6 ms of CPU per host call) and `request`'s Readable body, async
// iterator and AbortSignal (~330 µs per proxied request). Signed POSTs carry
// X-Devshard-Signature (lowercase hex of the creator's signature over
// sha256(escrow_id ‖ body ‖ u64be(unix s))) and X-Devshard-Timestamp (§2.4, §4.1); GETs are unsigned.
// Deadlines are those of the reference gateway (§4.5), each configurable.
import type { PrivateKey } from '@gonka-gateway/chain';
import { Agent, type Dispatcher } from 'undici';
import type { InferenceRequestWire } from '../json/wire.js';
import { decodeLegacyResponse, decodeSignaturesResponse, encodeInferenceRequest } from '../json/wire.js';
import type { DecodedTx } from '../proto/devshard-tx.js';
import { decodeTx } from '../proto/devshard-tx.js';
import { signRequest } from '../signing/request.js';
import { ChatStreamEnd, classifyLine } from './chat-events.js';
import { HostErrorCode, HostTransportError } from './errors.js';
import { fetchInto, HostExchange, readWholeBody } from './host-exchange.js';
import {
  decodeDiffRecords,
  decodeMempoolResponse,
  decodeVerifyTimeoutResponse,
  encodeVerifyTimeoutRequest,
} from './route-wire.js';
import { LineSplitter } from './sse-lines.js';
import type {
  CallOptions,
  ChatEvent,
  ChatOptions,
  ChatStream,
  DiffRecord,
  HostTarget,
  HostTransport,
  VerifyTimeoutRequest,
  VerifyTimeoutResponse,
} from './types.js';

/** §4.5 deadlines, in milliseconds. */
export interface TransportTimeouts {
  /** A send with an inference payload, whole stream included (30 min). */
  readonly inferenceMs: number;
  /** A send without payload: finalize rounds, flushes (30 s). */
  readonly protocolMs: number;
  /** One catch-up chunk (60 s). */
  readonly catchUpMs: number;
  /** verify-timeout (3 min). */
  readonly verifyTimeoutMs: number;
  /** GET signatures / diffs / mempool (30 s). */
  readonly queryMs: number;
}

export const DEFAULT_TRANSPORT_TIMEOUTS: TransportTimeouts = Object.freeze({
  inferenceMs: 30 * 60_000,
  protocolMs: 30_000,
  catchUpMs: 60_000,
  verifyTimeoutMs: 3 * 60_000,
  queryMs: 30_000,
});

/** Lines may exceed 1 MiB (§4.4); a receipt with a long mempool or a large chunk still fits. */
export const DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024;
/** Non-stream JSON answers (legacy chat response, GET diffs…). */
export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;

export interface HttpHostTransportOptions {
  /** The escrow creator's key: hosts accept chat only from it (§4.1, 403 otherwise). */
  readonly signer: PrivateKey;
  /** Unix seconds for X-Devshard-Timestamp (hosts allow ±30 s). Default: the system clock. */
  readonly nowSeconds?: () => bigint;
  /** A fetch to send through instead of the undici dispatcher (tests, proxies). */
  readonly fetch?: typeof fetch;
  /** The undici dispatcher (default: an Agent of this transport, keep-alive, no connection cap). */
  readonly dispatcher?: Dispatcher;
  readonly timeouts?: Partial<TransportTimeouts>;
  readonly maxLineBytes?: number;
  readonly maxBodyBytes?: number;
}

/** `{inference_url}/devshard/{version}` (§4.1). */
export function devshardBaseUrl(inferenceUrl: string, version: string): string {
  return `${inferenceUrl.replace(/\/+$/, '')}/devshard/${encodeURIComponent(version)}`;
}

const systemSeconds = () => BigInt(Math.floor(Date.now() / 1000));

function isEventStream(exchange: HostExchange): boolean {
  return exchange.contentType.startsWith('text/event-stream');
}

class HttpChatStream implements ChatStream {
  #used = false;

  constructor(
    private readonly exchange: HostExchange,
    private readonly payloadSent: boolean,
    private readonly maxLineBytes: number,
    private readonly maxBodyBytes: number,
  ) {}

  cancel(): void {
    this.exchange.cancel('stream cancelled');
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<ChatEvent, void, undefined> {
    for await (const batch of this.eventBatches()) yield* batch;
  }

  async *eventBatches(): AsyncGenerator<readonly ChatEvent[], void, undefined> {
    if (this.#used) throw new Error('a chat stream can be read once');
    this.#used = true;
    const exchange = this.exchange;
    let finished = false;
    let sawReceipt = false;
    try {
      if (isEventStream(exchange)) {
        // The lines of the chunks received since the last step and their events are taken
        // synchronously (sse-lines.ts), and handed over together: one async step per wake-up.
        const lines = new LineSplitter(this.maxLineBytes);
        const end = new ChatStreamEnd(this.payloadSent);
        for (;;) {
          const chunks = exchange.take();
          if (chunks === undefined) {
            if (exchange.settled() === 'ended') break;
            await exchange.wait();
            continue;
          }
          const batch: ChatEvent[] = [];
          let failure: { error: unknown } | undefined;
          try {
            for (const chunk of chunks) {
              lines.feed(chunk);
              for (let line = lines.next(); line !== undefined; line = lines.next()) {
                const event = classifyLine(line);
                if (event === undefined) continue;
                end.see(event);
                batch.push(event);
              }
            }
          } catch (error) {
            failure = { error };
          }
          sawReceipt = end.sawReceipt;
          // What came before a bad line is delivered first, as one event at a time would have been.
          if (batch.length > 0) yield batch;
          if (failure) throw failure.error;
        }
        const last = lines.end();
        const event = last === undefined ? undefined : classifyLine(last);
        if (event !== undefined) {
          end.see(event);
          sawReceipt = end.sawReceipt;
          yield [event];
        }
        end.check();
      } else {
        // Legacy non-SSE answer (§4.3): one JSON object, mempool inside.
        const text = (await readWholeBody(exchange, this.maxBodyBytes)).toString('utf8');
        let receipt: ReturnType<typeof decodeLegacyResponse>;
        try {
          receipt = decodeLegacyResponse(text);
        } catch (error) {
          throw new HostTransportError(
            HostErrorCode.Malformed,
            `legacy response: ${(error as Error).message}`,
          );
        }
        yield receipt.mempool && receipt.mempool.length > 0
          ? [
              { type: 'receipt', receipt },
              { type: 'meta', meta: { mempool: receipt.mempool } },
            ]
          : [{ type: 'receipt', receipt }];
      }
      finished = true;
    } catch (error) {
      const failure =
        exchange.stoppedBy ??
        brokenStreamFailure(error, sawReceipt && this.payloadSent) ??
        exchange.failureOf(error, 'chat stream');
      exchange.cancel('stream failed');
      throw failure;
    } finally {
      // A consumer that stops early (break) cancels the body; a finished one keeps the connection.
      if (!finished) exchange.cancel('stream left early');
    }
  }
}

/**
 * A connection that breaks while the body is read (undici: `other side closed`, `terminated`, an idle
 * body timeout) is a truncated stream, like a clean EOF before [DONE] (§4.4): after a receipt on a
 * payload send the execution was cut, which is not retryable (the executor may still finish and
 * bill it).
 */
function brokenStreamFailure(error: unknown, afterReceipt: boolean): HostTransportError | undefined {
  if (error instanceof HostTransportError) return undefined;
  const message = error instanceof Error ? error.message : String(error);
  return afterReceipt
    ? new HostTransportError(
        HostErrorCode.TruncatedExecution,
        `chat stream cut after the receipt: ${message}`,
        {
          cause: error,
        },
      )
    : new HostTransportError(HostErrorCode.Truncated, `chat stream cut: ${message}`, { cause: error });
}

/** Where the requests of one `baseUrl` go: undici's origin and the path prefix. */
interface HostEndpoint {
  readonly origin: string;
  readonly pathPrefix: string;
}

/** Hosts of the groups one process serves; past it the parsed URLs are dropped and parsed again. */
const MAX_ENDPOINTS = 1024;

export class HttpHostTransport implements HostTransport {
  readonly #signer: PrivateKey;
  readonly #now: () => bigint;
  readonly #fetch: typeof fetch | undefined;
  readonly #dispatcher: Dispatcher;
  readonly #timeouts: TransportTimeouts;
  readonly #maxLineBytes: number;
  readonly #maxBodyBytes: number;
  readonly #endpoints = new Map<string, HostEndpoint>();

  constructor(options: HttpHostTransportOptions) {
    this.#signer = options.signer;
    this.#now = options.nowSeconds ?? systemSeconds;
    this.#fetch = options.fetch;
    this.#dispatcher = options.dispatcher ?? new Agent({ connections: null, pipelining: 1 });
    this.#timeouts = { ...DEFAULT_TRANSPORT_TIMEOUTS, ...options.timeouts };
    this.#maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    this.#maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  }

  async chat(
    target: HostTarget,
    escrowId: string,
    request: InferenceRequestWire,
    options: ChatOptions = {},
  ): Promise<ChatStream> {
    const purpose = options.purpose ?? (request.payload ? 'inference' : 'protocol');
    const timeoutMs =
      options.timeoutMs ??
      (purpose === 'inference'
        ? this.#timeouts.inferenceMs
        : purpose === 'catch-up'
          ? this.#timeouts.catchUpMs
          : this.#timeouts.protocolMs);
    const body = Buffer.from(encodeInferenceRequest(request), 'utf8');
    const headers = this.#signedHeaders(escrowId, body);
    const exchange = new HostExchange(`chat ${request.nonce}`, 'chat/completions', timeoutMs, options.signal);
    this.#send(target, escrowId, 'POST', headers, body, exchange);
    await exchange.opened;
    return new HttpChatStream(
      exchange,
      request.payload !== undefined,
      this.#maxLineBytes,
      this.#maxBodyBytes,
    );
  }

  async verifyTimeout(
    target: HostTarget,
    escrowId: string,
    request: VerifyTimeoutRequest,
    options: CallOptions = {},
  ): Promise<VerifyTimeoutResponse> {
    const body = Buffer.from(encodeVerifyTimeoutRequest(request), 'utf8');
    const headers = this.#signedHeaders(escrowId, body);
    const exchange = new HostExchange(
      `verify-timeout ${request.inferenceId}`,
      'verify-timeout',
      options.timeoutMs ?? this.#timeouts.verifyTimeoutMs,
      options.signal,
    );
    this.#send(target, escrowId, 'POST', headers, body, exchange);
    const text = await this.#text(exchange);
    return this.#decode(text, decodeVerifyTimeoutResponse, 'verify-timeout response');
  }

  async getSignatures(
    target: HostTarget,
    escrowId: string,
    nonce: bigint,
    options: CallOptions = {},
  ): Promise<Map<number, Uint8Array>> {
    const text = await this.#get(target, escrowId, `signatures?nonce=${nonce}`, options);
    return this.#decode(text, decodeSignaturesResponse, 'signatures response');
  }

  async getDiffs(
    target: HostTarget,
    escrowId: string,
    from: bigint,
    to: bigint,
    options: CallOptions = {},
  ): Promise<DiffRecord[]> {
    const text = await this.#get(target, escrowId, `diffs?from=${from}&to=${to}`, options);
    return this.#decode(text, decodeDiffRecords, 'diffs response');
  }

  async getMempool(target: HostTarget, escrowId: string, options: CallOptions = {}): Promise<DecodedTx[]> {
    const text = await this.#get(target, escrowId, 'mempool', options);
    const raw = this.#decode(text, decodeMempoolResponse, 'mempool response');
    return this.#decode(raw, (txs) => txs.map(decodeTx), 'mempool tx');
  }

  /** `baseUrl` parsed once: the same hosts are called for every request of a session. */
  #endpoint(baseUrl: string): HostEndpoint {
    let endpoint = this.#endpoints.get(baseUrl);
    if (endpoint === undefined) {
      const url = new URL(baseUrl);
      endpoint = { origin: url.origin, pathPrefix: url.pathname.replace(/\/+$/, '') };
      if (this.#endpoints.size >= MAX_ENDPOINTS) this.#endpoints.clear();
      this.#endpoints.set(baseUrl, endpoint);
    }
    return endpoint;
  }

  /** The headers of a signed POST of `body` (§4.1). */
  #signedHeaders(escrowId: string, body: Uint8Array): Record<string, string> {
    const timestamp = this.#now();
    return {
      'content-type': 'application/json',
      // Compression would buffer the SSE stream on the way; request bodies are never compressed (§4.1).
      'accept-encoding': 'identity',
      'x-devshard-signature': signRequest(this.#signer, escrowId, body, timestamp),
      'x-devshard-timestamp': timestamp.toString(),
    };
  }

  async #get(target: HostTarget, escrowId: string, route: string, options: CallOptions): Promise<string> {
    const exchange = new HostExchange(
      `GET ${route}`,
      route,
      options.timeoutMs ?? this.#timeouts.queryMs,
      options.signal,
    );
    this.#send(target, escrowId, 'GET', { 'accept-encoding': 'identity' }, undefined, exchange);
    return this.#text(exchange);
  }

  /**
   * Starts the request; its answer, or why it could not start, arrives in `exchange` (the caller
   * awaits `exchange.opened` next, so nothing here may throw past it).
   */
  #send(
    target: HostTarget,
    escrowId: string,
    method: 'GET' | 'POST',
    headers: Record<string, string>,
    body: Uint8Array | undefined,
    exchange: HostExchange,
  ): void {
    try {
      const { origin, pathPrefix } = this.#endpoint(target.baseUrl);
      const path = `${pathPrefix}/sessions/${encodeURIComponent(escrowId)}/${exchange.route}`;
      if (this.#fetch) {
        fetchInto(exchange, this.#fetch, origin + path, { method, headers, ...(body ? { body } : {}) });
      } else {
        // A dispatcher that refuses at once (closed, bad options) reports through onResponseError.
        this.#dispatcher.dispatch({ origin, path, method, headers, body: body ?? null }, exchange);
      }
    } catch (error) {
      exchange.receiveError(error); // e.g. a baseUrl that is no URL
    }
  }

  async #text(exchange: HostExchange): Promise<string> {
    await exchange.opened;
    try {
      return (await readWholeBody(exchange, this.#maxBodyBytes)).toString('utf8');
    } catch (error) {
      const failure = exchange.failureOf(error, 'response body');
      exchange.cancel('body not read');
      throw failure;
    }
  }

  #decode<I, T>(input: I, decode: (input: I) => T, what: string): T {
    try {
      return decode(input);
    } catch (error) {
      throw new HostTransportError(HostErrorCode.Malformed, `${what}: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
}
