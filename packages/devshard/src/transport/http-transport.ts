// HostTransport over HTTP with undici's `request` on a keep-alive connection pool (one Agent per
// transport; bodies streamed as they arrive). `request` skips fetch's WHATWG layers (Request,
// Headers, web streams), which cost 1.3–1.6 ms of CPU per host call (issue 10). Signed POSTs carry X-Devshard-Signature (lowercase hex of the creator's
// signature over sha256(escrow_id ‖ body ‖ u64be(unix s))) and X-Devshard-Timestamp (§2.4, §4.1);
// GETs are unsigned. Deadlines are those of the reference gateway (§4.5), each configurable.
import type { PrivateKey } from '@gonka-gateway/chain';
import { Agent, type Dispatcher, request as undiciRequest } from 'undici';
import type { InferenceRequestWire } from '../json/wire.js';
import { decodeLegacyResponse, decodeSignaturesResponse, encodeInferenceRequest } from '../json/wire.js';
import type { DecodedTx } from '../proto/devshard-tx.js';
import { decodeTx } from '../proto/devshard-tx.js';
import { signRequest } from '../signing/request.js';
import { type CallScope, callScope } from './call-scope.js';
import { ChatStreamEnd, classifyLine } from './chat-events.js';
import { HostErrorCode, HostTransportError, hostStatusError } from './errors.js';
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
const MAX_ERROR_BODY_BYTES = 64 * 1024;

export interface HttpHostTransportOptions {
  /** The escrow creator's key: hosts accept chat only from it (§4.1, 403 otherwise). */
  readonly signer: PrivateKey;
  /** Unix seconds for X-Devshard-Timestamp (hosts allow ±30 s). Default: the system clock. */
  readonly nowSeconds?: () => bigint;
  /** A fetch to send through instead of undici's `request` (tests, proxies). */
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

/** What the transport reads of an HTTP answer, from undici's `request` or from a fetch Response. */
interface HostResponse {
  readonly status: number;
  header(name: string): string | undefined;
  readonly body: AsyncIterable<Uint8Array> | null;
}

function fromFetch(res: Response): HostResponse {
  return { status: res.status, header: (name) => res.headers.get(name) ?? undefined, body: res.body };
}

function fromUndici(res: Dispatcher.ResponseData): HostResponse {
  return {
    status: res.statusCode,
    header(name) {
      const v = res.headers[name];
      return Array.isArray(v) ? v.join(', ') : v;
    },
    body: res.body,
  };
}

async function readBounded(body: AsyncIterable<Uint8Array> | null, max: number): Promise<Uint8Array> {
  if (!body) return new Uint8Array(0);
  const parts: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of body) {
    length += chunk.length;
    if (length > max) throw new HostTransportError(HostErrorCode.BodyTooLarge, `body exceeds ${max} bytes`);
    parts.push(chunk);
  }
  return Buffer.concat(parts, length);
}

/** At most `max` bytes of an error body; the rest is discarded (it reaches logs, not the user). */
async function readErrorText(res: HostResponse): Promise<string> {
  if (!res.body) return '';
  const parts: Uint8Array[] = [];
  let length = 0;
  try {
    for await (const chunk of res.body) {
      parts.push(chunk);
      length += chunk.length;
      if (length >= MAX_ERROR_BODY_BYTES) break;
    }
  } catch {
    // A broken error body still leaves the status to report.
  }
  return Buffer.concat(parts, length).subarray(0, MAX_ERROR_BODY_BYTES).toString('utf8');
}

function isEventStream(res: HostResponse): boolean {
  return (res.header('content-type') ?? '').toLowerCase().startsWith('text/event-stream');
}

class HttpChatStream implements ChatStream {
  #used = false;

  constructor(
    private readonly res: HostResponse,
    private readonly scope: CallScope,
    private readonly payloadSent: boolean,
    private readonly maxLineBytes: number,
    private readonly maxBodyBytes: number,
  ) {}

  cancel(): void {
    this.scope.cancel('stream cancelled');
    this.scope.dispose();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<ChatEvent, void, undefined> {
    for await (const batch of this.eventBatches()) yield* batch;
  }

  async *eventBatches(): AsyncGenerator<readonly ChatEvent[], void, undefined> {
    if (this.#used) throw new Error('a chat stream can be read once');
    this.#used = true;
    let finished = false;
    let sawReceipt = false;
    try {
      if (isEventStream(this.res)) {
        // chatEvents(readLines(body)) in one loop: the lines of a received chunk and their events
        // are taken synchronously (sse-lines.ts), and handed over together.
        const lines = new LineSplitter(this.maxLineBytes);
        const end = new ChatStreamEnd(this.payloadSent);
        for await (const chunk of this.res.body ?? emptyBody()) {
          lines.feed(chunk);
          const batch: ChatEvent[] = [];
          let failure: { error: unknown } | undefined;
          try {
            for (let line = lines.next(); line !== undefined; line = lines.next()) {
              const event = classifyLine(line);
              if (event === undefined) continue;
              end.see(event);
              batch.push(event);
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
        const text = Buffer.from(await readBounded(this.res.body, this.maxBodyBytes)).toString('utf8');
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
      const failure = this.scope.signal.aborted
        ? this.scope.failure(error, 'chat stream')
        : (brokenStreamFailure(error, sawReceipt && this.payloadSent) ??
          this.scope.failure(error, 'chat stream'));
      this.scope.cancel('stream failed');
      throw failure;
    } finally {
      // A consumer that stops early (break) cancels the body; a finished one keeps the connection.
      if (!finished) this.scope.cancel('stream left early');
      this.scope.dispose();
    }
  }
}

/**
 * A connection that breaks while the body is read (undici: `TypeError: terminated`) is a truncated
 * stream, like a clean EOF before [DONE] (§4.4): after a receipt on a payload send the execution was
 * cut, which is not retryable (the executor may still finish and bill it).
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

async function* emptyBody(): AsyncGenerator<Uint8Array, void, undefined> {}

export class HttpHostTransport implements HostTransport {
  readonly #signer: PrivateKey;
  readonly #now: () => bigint;
  readonly #fetch: typeof fetch | undefined;
  readonly #dispatcher: Dispatcher;
  readonly #timeouts: TransportTimeouts;
  readonly #maxLineBytes: number;
  readonly #maxBodyBytes: number;

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
    const scope = callScope(`chat ${request.nonce}`, timeoutMs, options.signal);
    const res = await this.#post(target, escrowId, 'chat/completions', body, scope);
    return new HttpChatStream(
      res,
      scope,
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
    const scope = callScope(
      `verify-timeout ${request.inferenceId}`,
      options.timeoutMs ?? this.#timeouts.verifyTimeoutMs,
      options.signal,
    );
    try {
      const res = await this.#post(target, escrowId, 'verify-timeout', body, scope);
      const text = await this.#text(res, scope);
      return this.#decode(text, decodeVerifyTimeoutResponse, 'verify-timeout response');
    } finally {
      scope.dispose();
    }
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

  #url(target: HostTarget, escrowId: string, route: string): string {
    return `${target.baseUrl}/sessions/${encodeURIComponent(escrowId)}/${route}`;
  }

  async #post(
    target: HostTarget,
    escrowId: string,
    route: string,
    body: Uint8Array,
    scope: CallScope,
  ): Promise<HostResponse> {
    const timestamp = this.#now();
    const headers = {
      'content-type': 'application/json',
      // Compression would buffer the SSE stream on the way; request bodies are never compressed (§4.1).
      'accept-encoding': 'identity',
      'x-devshard-signature': signRequest(this.#signer, escrowId, body, timestamp),
      'x-devshard-timestamp': timestamp.toString(),
    };
    return this.#send(this.#url(target, escrowId, route), { method: 'POST', headers, body }, scope, route);
  }

  async #get(target: HostTarget, escrowId: string, route: string, options: CallOptions): Promise<string> {
    const scope = callScope(`GET ${route}`, options.timeoutMs ?? this.#timeouts.queryMs, options.signal);
    try {
      const res = await this.#send(
        this.#url(target, escrowId, route),
        { method: 'GET', headers: { 'accept-encoding': 'identity' } },
        scope,
        route,
      );
      return await this.#text(res, scope);
    } finally {
      scope.dispose();
    }
  }

  async #send(
    url: string,
    init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: Uint8Array },
    scope: CallScope,
    what: string,
  ): Promise<HostResponse> {
    let res: HostResponse;
    try {
      res = this.#fetch
        ? fromFetch(await this.#fetch(url, { ...init, signal: scope.signal }))
        : fromUndici(
            await undiciRequest(url, {
              method: init.method,
              headers: init.headers,
              ...(init.body ? { body: init.body } : {}),
              signal: scope.signal,
              dispatcher: this.#dispatcher,
            }),
          );
    } catch (error) {
      const failure = scope.failure(error, what);
      scope.dispose();
      throw failure;
    }
    if (res.status !== 200) {
      const text = await readErrorText(res);
      scope.dispose();
      throw hostStatusError(what, res.status, res.header('x-devshard-error'), text);
    }
    return res;
  }

  async #text(res: HostResponse, scope: CallScope): Promise<string> {
    try {
      return Buffer.from(await readBounded(res.body, this.#maxBodyBytes)).toString('utf8');
    } catch (error) {
      throw scope.failure(error, 'response body');
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
