// Bank balances (chain-and-network.md §3.1). One page is enough: an account holds a handful of denoms.

import type { ChainClient } from '../http/chain-client.js';
import { BASE_DENOM } from '../tx/build-tx.js';
import { type GetOptions, getParsed, seg } from './get-parsed.js';
import { asObject, int, objList, str } from './json-fields.js';

export interface Coin {
  denom: string;
  amount: bigint;
}

export const balancesPath = (address: string) => `/cosmos/bank/v1beta1/balances/${seg(address)}`;
/** Balances minus what is locked (vesting): what a tx can actually spend (SDK ≥ 0.46). */
export const spendableBalancesPath = (address: string) =>
  `/cosmos/bank/v1beta1/spendable_balances/${seg(address)}`;

export function parseBalances(json: unknown): Coin[] {
  return objList(asObject(json, ''), 'balances', '').map(([c, p]) => ({
    denom: str(c, 'denom', p),
    amount: int(c, 'amount', p),
  }));
}

export function queryBalances(client: ChainClient, address: string, options?: GetOptions): Promise<Coin[]> {
  return getParsed(client, 'chainRest', balancesPath(address), parseBalances, options);
}

/** The balance in one denom (default ngonka); 0 when the account holds none. */
export async function queryBalance(
  client: ChainClient,
  address: string,
  denom = BASE_DENOM,
  options?: GetOptions,
): Promise<bigint> {
  const coins = await queryBalances(client, address, options);
  return coins.find((c) => c.denom === denom)?.amount ?? 0n;
}

/** The spendable balance in one denom: what must cover a deposit plus its fee (keeper rule 7). */
export async function querySpendableBalance(
  client: ChainClient,
  address: string,
  denom = BASE_DENOM,
  options?: GetOptions,
): Promise<bigint> {
  const coins = await getParsed(client, 'chainRest', spendableBalancesPath(address), parseBalances, options);
  return coins.find((c) => c.denom === denom)?.amount ?? 0n;
}
