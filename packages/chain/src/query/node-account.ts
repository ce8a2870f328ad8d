// Node `/v2/accounts/{address}` (chain-and-network.md §3.3; gateway-spec.md §2.9): what the node
// itself knows of a requester — published pubkey and spendable balance. Key spellings are not yet
// confirmed live (§6.5), so `pubkey`/`pub_key` and `balance`/`amount` are both read.
import { ChainError } from '../errors.js';
import type { ChainClient } from '../http/chain-client.js';
import { errorBodyMessage } from '../http/request-json.js';
import { type GetOptions, getJson, parseBody, seg } from './get-parsed.js';
import { asObject, base64Bytes, int, type JsonObject, optObject, str } from './json-fields.js';

export interface NodeAccount {
  /** 33-byte compressed key, or null when not published. */
  pubKey: Uint8Array | null;
  /** Spendable balance in `denom`. */
  balance: bigint;
  denom: string;
  raw: JsonObject;
}

export const nodeAccountPath = (address: string) => `/v2/accounts/${seg(address)}`;

export function parseNodeAccount(json: unknown): NodeAccount {
  const outer = asObject(json, '');
  const o = optObject(outer, 'account', '') ?? outer;
  const p = outer.account ? 'account' : '';
  const pubKeyField = o.pubkey !== undefined ? 'pubkey' : 'pub_key';
  return {
    pubKey: typeof o[pubKeyField] === 'string' ? base64Bytes(o, pubKeyField, p) : null,
    balance: int(o, o.balance !== undefined ? 'balance' : 'amount', p),
    denom: str(o, 'denom', p, 'ngonka'),
    raw: o,
  };
}

/**
 * The account as the node sees it, or null on 404 (`account not found`). An account that exists but
 * never signed a tx throws CHAIN_ERR_PUBKEY_UNAVAILABLE (the node answers with an error, not a null).
 */
export async function queryNodeAccount(
  client: ChainClient,
  address: string,
  options?: GetOptions,
): Promise<NodeAccount | null> {
  const res = await getJson(client, 'publicApi', nodeAccountPath(address), options);
  if (res.status === 404) return null;
  if (res.status >= 400 && /pub\s*key\s+unavailable/i.test(errorBodyMessage(res))) {
    throw new ChainError('CHAIN_ERR_PUBKEY_UNAVAILABLE', {
      endpoint: res.endpoint,
      status: res.status,
      hint: 'publish the public key first (gwctl publish-pubkey)',
    });
  }
  return parseBody(res, parseNodeAccount);
}
