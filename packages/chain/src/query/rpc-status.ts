// CometBFT `/status` (chain-and-network.md §3.2; gateway-spec.md §4 operator reads): latest height,
// block time and chain id. The block time matters for direct requests, whose timestamps the node
// checks against it (§4.5).
import type { ChainClient } from '../http/chain-client.js';
import { type GetOptions, getParsed } from './get-parsed.js';
import { asObject, optObject, reqInt, reqObject, str } from './json-fields.js';

export interface RpcStatus {
  latestBlockHeight: bigint;
  /** RFC 3339 with nanoseconds, as sent. */
  latestBlockTime: string;
  /** Nanoseconds since the Unix epoch, or null if the time does not parse. */
  latestBlockTimeNs: bigint | null;
  chainId: string;
}

/** RFC 3339 → nanoseconds, keeping all nine fractional digits (Date keeps only three). */
export function parseRfc3339Ns(text: string): bigint | null {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/.exec(text);
  if (!m) return null;
  const ms = Date.parse(`${m[1]}${m[3]}`);
  if (Number.isNaN(ms)) return null;
  return BigInt(ms) * 1_000_000n + BigInt((m[2] ?? '').padEnd(9, '0'));
}

export function parseRpcStatus(json: unknown): RpcStatus {
  const body = asObject(json, '');
  // JSON-RPC wraps the answer in `result`; some proxies return the result object itself.
  const result = optObject(body, 'result', '') ?? body;
  const p = body.result ? 'result' : '';
  const sync = reqObject(result, 'sync_info', p);
  const syncPath = p ? `${p}.sync_info` : 'sync_info';
  const nodeInfo = optObject(result, 'node_info', p);
  const time = str(sync, 'latest_block_time', syncPath);
  return {
    latestBlockHeight: reqInt(sync, 'latest_block_height', syncPath),
    latestBlockTime: time,
    latestBlockTimeNs: parseRfc3339Ns(time),
    chainId: nodeInfo ? str(nodeInfo, 'network', `${p}.node_info`) : '',
  };
}

export function queryRpcStatus(client: ChainClient, options?: GetOptions): Promise<RpcStatus> {
  return getParsed(client, 'chainRpc', '/status', parseRpcStatus, options);
}
