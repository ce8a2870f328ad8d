// x/auth account (chain-and-network.md §3.1): account number for SIGN_MODE_DIRECT and whether the
// public key is published yet (§5). Vesting accounts nest the base account under
// `base_vesting_account.base_account`, module accounts under `base_account`.
import type { ChainClient } from '../http/chain-client.js';
import { type GetOptions, getJson, parseBody, seg } from './get-parsed.js';
import { asObject, base64Bytes, int, type JsonObject, optObject, reqObject, str } from './json-fields.js';

export const accountPath = (address: string) => `/cosmos/auth/v1beta1/accounts/${seg(address)}`;

export interface AuthAccount {
  /** `@type`, e.g. `/cosmos.auth.v1beta1.BaseAccount` or a vesting type. */
  type: string;
  address: string;
  accountNumber: bigint;
  sequence: bigint;
  /** Compressed secp256k1 key, or null until the account has signed a tx. */
  pubKey: Uint8Array | null;
  pubKeyType: string | null;
}

function baseAccountOf(account: JsonObject): [JsonObject, string] {
  const vesting = optObject(account, 'base_vesting_account', 'account');
  if (vesting)
    return [
      reqObject(vesting, 'base_account', 'account.base_vesting_account'),
      'account.base_vesting_account.base_account',
    ];
  const base = optObject(account, 'base_account', 'account');
  if (base) return [base, 'account.base_account'];
  return [account, 'account'];
}

export function parseAccount(json: unknown): AuthAccount {
  const account = reqObject(asObject(json, ''), 'account', '');
  const [base, p] = baseAccountOf(account);
  const pub = optObject(base, 'pub_key', p);
  return {
    type: str(account, '@type', 'account'),
    address: str(base, 'address', p),
    accountNumber: int(base, 'account_number', p),
    sequence: int(base, 'sequence', p),
    pubKey: pub ? base64Bytes(pub, 'key', `${p}.pub_key`) : null,
    pubKeyType: pub ? str(pub, '@type', `${p}.pub_key`) || null : null,
  };
}

/** The account, or null when the chain has never seen the address (never funded). */
export async function queryAccount(
  client: ChainClient,
  address: string,
  options?: GetOptions,
): Promise<AuthAccount | null> {
  const res = await getJson(client, 'chainRest', accountPath(address), options);
  if (res.status === 404) return null;
  return parseBody(res, parseAccount);
}
