// The chain id, read live (chain-and-network.md §1, §3.1): it goes into every SignDoc.
import type { ChainClient } from '../http/chain-client.js';
import { type GetOptions, getParsed } from './get-parsed.js';
import { asObject, reqObject, reqStr } from './json-fields.js';

export const NODE_INFO_PATH = '/cosmos/base/tendermint/v1beta1/node_info';

export function parseNodeInfoChainId(json: unknown): string {
  return reqStr(reqObject(asObject(json, ''), 'default_node_info', ''), 'network', 'default_node_info');
}

export function queryChainId(client: ChainClient, options?: GetOptions): Promise<string> {
  return getParsed(client, 'chainRest', NODE_INFO_PATH, parseNodeInfoChainId, options);
}
