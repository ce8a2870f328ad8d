// One HTTP exchange with a JSON body, turned into data or a typed ChainError. Transport failures and
// timeouts are errors; HTTP statuses are returned so each caller decides what 404 means (absent
// account, tx not indexed yet, …).

import { parseJsonExact } from '../encoding/json.js';
import { ChainError, excerpt } from '../errors.js';

export interface HttpTransport {
  readonly fetch: typeof fetch;
  readonly timeoutMs: number;
}

export interface JsonRequest {
  method: 'GET' | 'POST';
  /** Base URL without trailing slash. */
  baseUrl: string;
  /** Path starting with `/`; only this (and baseLabel) appears in errors. */
  path: string;
  baseLabel: string;
  body?: unknown;
  signal?: AbortSignal;
}

export interface JsonResponse {
  status: number;
  /** Parsed JSON (big integers kept exact), or undefined when the body is not JSON. */
  json: unknown;
  text: string;
  endpoint: string;
}

export function endpointLabel(method: string, path: string, baseLabel: string): string {
  return `${method} ${path} (${baseLabel})`;
}

function isTimeout(err: unknown): boolean {
  return err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
}

export async function requestJson(transport: HttpTransport, req: JsonRequest): Promise<JsonResponse> {
  const endpoint = endpointLabel(req.method, req.path, req.baseLabel);
  const timeout = AbortSignal.timeout(transport.timeoutMs);
  const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
  let res: Response;
  let text: string;
  try {
    res = await transport.fetch(`${req.baseUrl}${req.path}`, {
      method: req.method,
      headers:
        req.body === undefined
          ? { accept: 'application/json' }
          : { accept: 'application/json', 'content-type': 'application/json' },
      body: req.body === undefined ? undefined : JSON.stringify(req.body),
      signal,
    });
    text = await res.text();
  } catch (err) {
    if (isTimeout(err) && !req.signal?.aborted) {
      throw new ChainError('CHAIN_ERR_TIMEOUT', {
        endpoint,
        detail: `no answer within ${transport.timeoutMs} ms`,
      });
    }
    const reason =
      err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : 'fetch failed';
    throw new ChainError('CHAIN_ERR_UNREACHABLE', { endpoint, detail: reason, cause: err });
  }
  let json: unknown;
  if (text.trim() !== '') {
    try {
      json = parseJsonExact(text);
    } catch {
      json = undefined;
    }
  }
  return { status: res.status, json, text, endpoint };
}

/** The message a Cosmos/grpc-gateway or node error body carries, for error details. */
export function errorBodyMessage(res: JsonResponse): string {
  const j = res.json;
  if (j && typeof j === 'object') {
    const o = j as Record<string, unknown>;
    for (const key of ['message', 'error', 'raw_log', 'detail']) {
      const v = o[key];
      if (typeof v === 'string' && v !== '') return excerpt(v);
      if (v && typeof v === 'object' && typeof (v as Record<string, unknown>).message === 'string') {
        return excerpt((v as Record<string, string>).message!);
      }
    }
  }
  return excerpt(res.text);
}

/** Throws HTTP_STATUS (or NOT_FOUND for 404) unless the status is 2xx. */
export function assertOk(res: JsonResponse): void {
  if (res.status >= 200 && res.status < 300) return;
  const code = res.status === 404 ? 'CHAIN_ERR_NOT_FOUND' : 'CHAIN_ERR_HTTP_STATUS';
  throw new ChainError(code, { endpoint: res.endpoint, status: res.status, detail: errorBodyMessage(res) });
}
