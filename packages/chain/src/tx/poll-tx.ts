// GET /cosmos/tx/v1beta1/txs/{hash} until the tx is included, failed, or the deadline passes
// (chain-and-network.md §2.4: every 2 s for ~45 s; 404 = not indexed yet). The tx-query base
// (DEVSHARD_TX_QUERY_REST) is asked first and the chain REST base second, as the official client
// does: one indexer lagging must not hide a committed tx.

import { ChainError } from '../errors.js';
import { BASE_LABELS, type ChainBase, type ChainClient } from '../http/chain-client.js';
import { type JsonResponse, requestJson } from '../http/request-json.js';
import { parseBody } from '../query/get-parsed.js';
import { outcomeFromResponse, type TxFailed, type TxIncluded, type TxOutcome } from './tx-outcome.js';
import { parseTxResponse } from './tx-response.js';

export const txPath = (hash: string) => `/cosmos/tx/v1beta1/txs/${encodeURIComponent(hash)}`;

export type TxLookup =
  | { kind: 'found'; outcome: TxIncluded | TxFailed }
  | { kind: 'not_found' }
  | { kind: 'error'; error: ChainError };

function queryBases(client: ChainClient): Array<[string, ChainBase]> {
  const bases: Array<[string, ChainBase]> = [];
  if (client.txQueryRest) bases.push([client.txQueryRest, 'txQueryRest']);
  if (client.chainRest && client.chainRest !== client.txQueryRest)
    bases.push([client.chainRest, 'chainRest']);
  return bases;
}

/** One lookup: found on any base wins; not found only when every base answered 404. */
export async function lookupTx(client: ChainClient, txHash: string, signal?: AbortSignal): Promise<TxLookup> {
  const hash = txHash.toUpperCase();
  if (!/^[0-9A-F]{64}$/.test(hash)) {
    throw new ChainError('CHAIN_ERR_INVALID_ARGUMENT', { detail: 'tx hash must be 64 hex characters' });
  }
  const bases = queryBases(client);
  if (bases.length === 0)
    throw new ChainError('CHAIN_ERR_NOT_CONFIGURED', { detail: 'no REST base for tx queries' });
  let error: ChainError | undefined;
  let notFound = 0;
  for (const [baseUrl, base] of bases) {
    let res: JsonResponse;
    try {
      res = await requestJson(client, {
        method: 'GET',
        baseUrl,
        path: txPath(hash),
        baseLabel: BASE_LABELS[base],
        signal,
      });
    } catch (err) {
      error =
        err instanceof ChainError ? err : new ChainError('CHAIN_ERR_UNREACHABLE', { detail: String(err) });
      continue;
    }
    if (res.status === 404) {
      notFound++;
      continue;
    }
    try {
      return { kind: 'found', outcome: outcomeFromResponse(hash, parseBody(res, parseTxResponse)) };
    } catch (err) {
      error =
        err instanceof ChainError ? err : new ChainError('CHAIN_ERR_BAD_RESPONSE', { detail: String(err) });
    }
  }
  return notFound === bases.length || !error ? { kind: 'not_found' } : { kind: 'error', error };
}

export interface PollProgress {
  attempt: number;
  elapsedMs: number;
  /** What the last lookup saw: not indexed yet, or the error it hit. */
  last: 'not_found' | ChainError;
}

export interface PollOptions {
  /** Default 2000. */
  intervalMs?: number;
  /** Default 45000. */
  timeoutMs?: number;
  signal?: AbortSignal;
  onProgress?: (progress: PollProgress) => void;
  /** Carried into an `unknown` outcome. */
  timeoutTimestampNs?: bigint;
}

export const DEFAULT_POLL_INTERVAL_MS = 2_000;
export const DEFAULT_POLL_TIMEOUT_MS = 45_000;

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Never throws for network reasons: a lookup that cannot conclude ends in `unknown`. */
export async function pollTx(
  client: ChainClient,
  txHash: string,
  options: PollOptions = {},
): Promise<TxOutcome> {
  const interval = options.intervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  const timeout = options.timeoutMs ?? DEFAULT_POLL_TIMEOUT_MS;
  const started = Date.now();
  const hash = txHash.toUpperCase();
  let attempt = 0;
  let lastError: ChainError | undefined;
  for (;;) {
    attempt++;
    const result = await lookupTx(client, hash, options.signal);
    if (result.kind === 'found') return result.outcome;
    lastError = result.kind === 'error' ? result.error : undefined;
    const elapsedMs = Date.now() - started;
    options.onProgress?.({ attempt, elapsedMs, last: result.kind === 'error' ? result.error : 'not_found' });
    if (options.signal?.aborted || elapsedMs + interval > timeout) break;
    await sleep(interval, options.signal);
    if (options.signal?.aborted) break;
  }
  const why = options.signal?.aborted
    ? 'polling was cancelled'
    : `not indexed within ${Math.round(timeout / 1000)} s`;
  return {
    status: 'unknown',
    txHash: hash,
    reason: lastError ? `${why}; last lookup error: ${lastError.message}` : why,
    timeoutTimestampNs: options.timeoutTimestampNs ?? null,
  };
}
