// Node `/v1/identity` (chain-and-network.md §3.3), in either of its two documented shapes:
//  - official SDK: `{ data: { delegate_ta: { "<url>": "<address>" } } }`
//  - design document: `{ address, warm_key_address, block, timestamp, delegate_tas: [{url, warm_key_address}] }`
// Both normalise to a list of delegate URLs; an empty list means "use the participant's own URL".
import type { ChainClient } from '../http/chain-client.js';
import { type GetOptions, getParsed } from './get-parsed.js';
import { asObject, type JsonObject, objList, optObject, str } from './json-fields.js';

export const IDENTITY_PATH = '/v1/identity';

export interface NodeIdentity {
  address: string | null;
  warmKeyAddress: string | null;
  delegates: Array<{ url: string; address: string | null }>;
  raw: JsonObject;
}

export function parseIdentity(json: unknown): NodeIdentity {
  const outer = asObject(json, '');
  const data = optObject(outer, 'data', '');
  const o = data ?? outer;
  const p = data ? 'data' : '';
  const delegates: NodeIdentity['delegates'] = [];
  const map = optObject(o, 'delegate_ta', p);
  if (map) {
    for (const [url, address] of Object.entries(map)) {
      if (url !== '')
        delegates.push({ url, address: typeof address === 'string' && address !== '' ? address : null });
    }
  }
  for (const [d, dp] of objList(o, 'delegate_tas', p)) {
    const url = str(d, 'url', dp);
    const address = str(d, 'warm_key_address', dp) || str(d, 'address', dp);
    if (url !== '') delegates.push({ url, address: address || null });
  }
  return {
    address: str(o, 'address', p) || null,
    warmKeyAddress: str(o, 'warm_key_address', p) || null,
    delegates,
    raw: o,
  };
}

/** Identity of the node at `publicApi` (or of any node: pass a client whose publicApi is its URL). */
export function queryIdentity(client: ChainClient, options?: GetOptions): Promise<NodeIdentity> {
  return getParsed(client, 'publicApi', IDENTITY_PATH, parseIdentity, options);
}
