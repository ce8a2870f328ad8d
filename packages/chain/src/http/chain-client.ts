// The small client object every query and tx function takes (style.md: cosmjs's
// setupBankExtension(base) receives its client, never creates one). It holds base URLs, the fetch
// to use and a per-request timeout; nothing here has a default host, so the devnet, a local node and
// a public node (`{node}/chain-api`, `{node}/chain-rpc`, chain-and-network.md conventions) all fit.
import { ChainError } from '../errors.js';

export type ChainBase = 'chainRest' | 'txQueryRest' | 'chainRpc' | 'publicApi';

/** How a base appears in error messages (never the URL: it may carry an API key). */
export const BASE_LABELS: Record<ChainBase, string> = {
  chainRest: 'chain REST',
  txQueryRest: 'tx query REST',
  chainRpc: 'chain RPC',
  publicApi: 'public API',
};

export interface ChainClient {
  /** Cosmos REST (LCD), e.g. `http://127.0.0.1:1317` or `{node}/chain-api`. DEVSHARD_CHAIN_REST. */
  readonly chainRest: string | undefined;
  /** REST base for tx lookups; defaults to chainRest. DEVSHARD_TX_QUERY_REST. */
  readonly txQueryRest: string | undefined;
  /** CometBFT RPC, e.g. `http://127.0.0.1:26657` or `{node}/chain-rpc`. NODE_RPC. */
  readonly chainRpc: string | undefined;
  /** Node public API (serves `/v1/...`, `/v2/...`). DEVSHARD_PUBLIC_API. */
  readonly publicApi: string | undefined;
  readonly fetch: typeof fetch;
  /** Per-request timeout in milliseconds. */
  readonly timeoutMs: number;
}

export interface ChainClientOptions {
  chainRest?: string;
  txQueryRest?: string;
  chainRpc?: string;
  publicApi?: string;
  fetch?: typeof fetch;
  timeoutMs?: number;
}

export const DEFAULT_HTTP_TIMEOUT_MS = 10_000;

function normalizeBase(name: ChainBase, url: string | undefined): string | undefined {
  if (url === undefined || url.trim() === '') return undefined;
  const trimmed = url.trim();
  let parsed: URL;
  try {
    parsed = new URL(trimmed);
  } catch {
    throw new ChainError('CHAIN_ERR_INVALID_ARGUMENT', { detail: `${name} is not a valid URL` });
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ChainError('CHAIN_ERR_INVALID_ARGUMENT', { detail: `${name} must be an http(s) URL` });
  }
  if (parsed.username || parsed.password) {
    // fetch refuses such URLs, and its error would quote the credentials.
    throw new ChainError('CHAIN_ERR_INVALID_ARGUMENT', { detail: `${name} must not embed credentials` });
  }
  if (parsed.search || parsed.hash) {
    throw new ChainError('CHAIN_ERR_INVALID_ARGUMENT', {
      detail: `${name} must not have a query or fragment`,
    });
  }
  return trimmed.replace(/\/+$/, '');
}

export function createChainClient(options: ChainClientOptions): ChainClient {
  const chainRest = normalizeBase('chainRest', options.chainRest);
  const timeoutMs = options.timeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    throw new ChainError('CHAIN_ERR_INVALID_ARGUMENT', { detail: 'timeoutMs must be a positive integer' });
  }
  return Object.freeze({
    chainRest,
    txQueryRest: normalizeBase('txQueryRest', options.txQueryRest) ?? chainRest,
    chainRpc: normalizeBase('chainRpc', options.chainRpc),
    publicApi: normalizeBase('publicApi', options.publicApi),
    fetch:
      options.fetch ??
      ((input: Parameters<typeof fetch>[0], init?: RequestInit) => globalThis.fetch(input, init)),
    timeoutMs,
  });
}

/** The base URL for `base`, or CHAIN_ERR_NOT_CONFIGURED naming which setting is missing. */
export function requireBase(client: ChainClient, base: ChainBase): string {
  const url = client[base];
  if (url === undefined) {
    throw new ChainError('CHAIN_ERR_NOT_CONFIGURED', { detail: `${BASE_LABELS[base]} base URL is not set` });
  }
  return url;
}
