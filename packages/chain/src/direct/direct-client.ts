// Sending a signed direct request (chain-and-network.md §4; gateway-spec.md §5.2): the bytes signed
// are the bytes sent, unchanged; a 4xx/5xx answer becomes CHAIN_ERR_DIRECT_REJECTED carrying the
// node's message and an operator hint.
import { ChainError, excerpt } from '../errors.js';
import type { DirectRequestSigner } from './direct-signer.js';
import type { DirectEndpoint } from './endpoint-selection.js';
import { directRejectionHint } from './rejection-hints.js';
import { parseSse, type SseEvent } from './sse.js';

export const CHAT_COMPLETIONS_PATH = '/chat/completions';

export interface DirectRequestInput {
  fetch?: typeof fetch;
  endpoint: DirectEndpoint;
  signer: DirectRequestSigner;
  /** The exact body bytes (JSON). */
  body: Uint8Array;
  /** Under the endpoint's /v1 base; default `/chat/completions`. */
  path?: string;
  /** Whole-request timeout for non-streaming, time-to-first-byte for streaming. Default 120 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Explicit timestamp (tooling only); default from the signer's monotonic counter. */
  timestampNs?: bigint;
}

export interface DirectResponse {
  status: number;
  contentType: string;
  /** Body text exactly as received. */
  text: string;
  timestampNs: bigint;
}

export interface DirectStream {
  status: number;
  contentType: string;
  timestampNs: bigint;
  /** Events until the stream ends; a `data: [DONE]` event is passed through. */
  events: AsyncGenerator<SseEvent>;
}

export const DEFAULT_DIRECT_TIMEOUT_MS = 120_000;

function nodeMessage(text: string): string {
  try {
    const j = JSON.parse(text) as unknown;
    if (j && typeof j === 'object') {
      const o = j as Record<string, unknown>;
      const e = o.error;
      if (typeof e === 'string') return e;
      if (e && typeof e === 'object' && typeof (e as Record<string, unknown>).message === 'string') {
        return (e as Record<string, string>).message!;
      }
      if (typeof o.message === 'string') return o.message;
    }
  } catch {
    // Plain-text error body.
  }
  return text;
}

async function send(
  input: DirectRequestInput,
  stream: boolean,
): Promise<{ res: Response; timestampNs: bigint; endpoint: string; done: () => void }> {
  const path = input.path ?? CHAT_COMPLETIONS_PATH;
  const endpoint = `POST ${path} (direct endpoint ${input.endpoint.transferAddress})`;
  const signed = input.signer.sign(input.body, input.endpoint.transferAddress, {
    timestampNs: input.timestampNs,
  });
  const timeoutMs = input.timeoutMs ?? DEFAULT_DIRECT_TIMEOUT_MS;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException('timeout', 'TimeoutError')), timeoutMs);
  const onAbort = () => controller.abort(input.signal?.reason);
  input.signal?.addEventListener('abort', onAbort, { once: true });
  const done = () => {
    clearTimeout(timer);
    input.signal?.removeEventListener('abort', onAbort);
  };
  let res: Response;
  try {
    res = await (input.fetch ?? globalThis.fetch)(`${input.endpoint.baseUrl}${path}`, {
      method: 'POST',
      headers: { ...signed.headers, accept: stream ? 'text/event-stream' : 'application/json' },
      body: signed.body,
      signal: controller.signal,
    });
  } catch (err) {
    done();
    if (controller.signal.aborted && !input.signal?.aborted) {
      throw new ChainError('CHAIN_ERR_TIMEOUT', { endpoint, detail: `no answer within ${timeoutMs} ms` });
    }
    const reason =
      err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : 'fetch failed';
    throw new ChainError('CHAIN_ERR_UNREACHABLE', { endpoint, detail: reason });
  }
  // Streaming: the timeout covers the wait for the first byte only.
  if (stream) clearTimeout(timer);
  if (res.status >= 400) {
    const text = await res.text().catch(() => '');
    done();
    const message = excerpt(nodeMessage(text));
    throw new ChainError('CHAIN_ERR_DIRECT_REJECTED', {
      endpoint,
      status: res.status,
      detail: message,
      hint: directRejectionHint(message),
    });
  }
  return { res, timestampNs: signed.timestampNs, endpoint, done };
}

/** Non-streaming request; returns the body text as received. */
export async function sendDirectRequest(input: DirectRequestInput): Promise<DirectResponse> {
  const { res, timestampNs, endpoint, done } = await send(input, false);
  try {
    return {
      status: res.status,
      contentType: res.headers.get('content-type') ?? '',
      text: await res.text(),
      timestampNs,
    };
  } catch (err) {
    throw new ChainError('CHAIN_ERR_UNREACHABLE', {
      endpoint,
      detail: `body not received: ${(err as Error).message}`,
    });
  } finally {
    done();
  }
}

/** Streaming request (the body must ask for `"stream": true`); yields SSE events. */
export async function streamDirectRequest(input: DirectRequestInput): Promise<DirectStream> {
  const { res, timestampNs, done } = await send(input, true);
  const contentType = res.headers.get('content-type') ?? '';
  async function* events(): AsyncGenerator<SseEvent> {
    try {
      if (!res.body) return;
      if (!contentType.includes('text/event-stream')) {
        // A node that ignored "stream": true answers with one JSON document.
        yield { event: 'message', data: await res.text(), id: undefined };
        return;
      }
      yield* parseSse(res.body);
    } finally {
      done();
    }
  }
  return { status: res.status, contentType, timestampNs, events: events() };
}
