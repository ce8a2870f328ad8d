// POST /cosmos/tx/v1beta1/txs with BROADCAST_MODE_SYNC (chain-and-network.md §2.4). Never throws: a
// broadcast whose answer is lost may still have reached the mempool, so transport problems are a
// result (`no_answer`) that sends the caller to polling, not an exception.
import { base64 } from '@scure/base';
import { isChainError } from '../errors.js';
import { BASE_LABELS, type ChainClient, requireBase } from '../http/chain-client.js';
import { errorBodyMessage, requestJson } from '../http/request-json.js';
import { parseTxResponse } from './tx-response.js';

export const BROADCAST_PATH = '/cosmos/tx/v1beta1/txs';

/** Request timeout and rate limiting say nothing about the tx: treat them as no answer. */
const RETRYABLE_CLIENT_STATUSES = new Set([408, 429]);

/** sdkerrors.ErrTxInMempoolCache: the node already holds these exact bytes, so they are in flight. */
const TX_IN_MEMPOOL_CACHE = { codespace: 'sdk', code: 19 };

export type BroadcastResult =
  /** CheckTx passed (or the tx was already in the mempool); `txHash` as the node reported it. */
  | { kind: 'accepted'; txHash: string }
  /** CheckTx refused the tx (or the node refused the request with a 4xx, codespace `http`); it is
   * not in this node's mempool. */
  | { kind: 'rejected'; code: number; codespace: string; rawLog: string }
  /** No usable answer (connection dropped, timeout, 5xx, malformed body): the tx may be in flight. */
  | { kind: 'no_answer'; reason: string };

export async function broadcastTx(
  client: ChainClient,
  txBytes: Uint8Array,
  options: { signal?: AbortSignal } = {},
): Promise<BroadcastResult> {
  let res: Awaited<ReturnType<typeof requestJson>>;
  try {
    res = await requestJson(client, {
      method: 'POST',
      baseUrl: requireBase(client, 'chainRest'),
      path: BROADCAST_PATH,
      baseLabel: BASE_LABELS.chainRest,
      body: { tx_bytes: base64.encode(txBytes), mode: 'BROADCAST_MODE_SYNC' },
      signal: options.signal,
    });
  } catch (err) {
    if (isChainError(err) && err.code === 'CHAIN_ERR_NOT_CONFIGURED') throw err;
    return { kind: 'no_answer', reason: err instanceof Error ? err.message : 'broadcast failed' };
  }
  if (res.status >= 400 && res.status < 500 && !RETRYABLE_CLIENT_STATUSES.has(res.status)) {
    // The node (or its gateway) refused the request itself, e.g. 400 "tx parse error": nothing
    // entered a mempool. Reported like a CheckTx refusal, so the caller still confirms with one
    // lookup before calling it failed, instead of polling for the full timeout.
    return { kind: 'rejected', code: res.status, codespace: 'http', rawLog: errorBodyMessage(res) };
  }
  if (res.status < 200 || res.status >= 300) {
    return { kind: 'no_answer', reason: `${res.endpoint}: HTTP ${res.status}: ${errorBodyMessage(res)}` };
  }
  let r: ReturnType<typeof parseTxResponse>;
  try {
    r = parseTxResponse(res.json);
  } catch (err) {
    return { kind: 'no_answer', reason: `${res.endpoint}: malformed response: ${(err as Error).message}` };
  }
  if (
    r.code === 0 ||
    (r.code === TX_IN_MEMPOOL_CACHE.code && r.codespace === TX_IN_MEMPOOL_CACHE.codespace)
  ) {
    return { kind: 'accepted', txHash: r.txHash };
  }
  return { kind: 'rejected', code: r.code, codespace: r.codespace, rawLog: r.rawLog };
}
