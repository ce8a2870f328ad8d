// Bank and account keeping in one denom (ngonka). Spendable is the balance unless the
// `insufficientFunds` fault locks it, the way vesting locks coins on the real chain.
import { sha256 } from '@gonka-gateway/chain';
import { bech32 } from '@scure/base';
import type { Faults } from '../faults.js';
import { SdkErrors } from './errors.js';
import { makeEvent, type TxEvent } from './events.js';
import type { AccountRecord, ChainStores } from './stores.js';

export const DENOM = 'ngonka';

export type ModuleName = 'fee_collector' | 'inference' | 'gov';
export const MODULE_NAMES: readonly ModuleName[] = ['fee_collector', 'inference', 'gov'];

/** Cosmos module address: the first 20 bytes of sha256(module name). Constants, computed once. */
const MODULE_ADDRESSES: Readonly<Record<ModuleName, string>> = Object.freeze(
  Object.fromEntries(
    MODULE_NAMES.map((name) => [
      name,
      bech32.encode('gonka', bech32.toWords(sha256(new TextEncoder().encode(name)).slice(0, 20))),
    ]),
  ) as Record<ModuleName, string>,
);

export function moduleAddress(name: ModuleName): string {
  return MODULE_ADDRESSES[name];
}

export function balanceOf(state: ChainStores, address: string): bigint {
  return state.balances.get(address) ?? 0n;
}

export function spendableOf(state: ChainStores, faults: Faults, address: string): bigint {
  return faults.isSpendableZero(address) ? 0n : balanceOf(state, address);
}

/** Creates the x/auth account on first use (as receiving coins does), with the next number. */
export function ensureAccount(state: ChainStores, address: string, moduleName?: string): AccountRecord {
  const existing = state.accounts.get(address);
  if (existing) return existing;
  const accountNumber = state.meta.get('nextAccountNumber') ?? 0n;
  state.meta.set('nextAccountNumber', accountNumber + 1n);
  const record: AccountRecord = {
    address,
    accountNumber,
    sequence: 0n,
    pubKey: null,
    ...(moduleName ? { moduleName } : {}),
  };
  state.accounts.set(address, record);
  return record;
}

/** Moves coins; throws sdk/5 with the SDK's wording when spendable is short. */
export function transfer(
  state: ChainStores,
  faults: Faults,
  from: string,
  to: string,
  amount: bigint,
  what = 'transfer',
): TxEvent[] {
  if (amount < 0n) throw SdkErrors.invalidCoins(`negative amount ${amount}`);
  const spendable = spendableOf(state, faults, from);
  if (spendable < amount) {
    throw SdkErrors.insufficientFunds(
      `${what}: spendable balance ${spendable}${DENOM} is smaller than ${amount}${DENOM}`,
    );
  }
  if (amount === 0n) return [];
  state.balances.set(from, balanceOf(state, from) - amount);
  ensureAccount(state, to);
  state.balances.set(to, balanceOf(state, to) + amount);
  const coins = `${amount}${DENOM}`;
  return [
    makeEvent('coin_spent', { spender: from, amount: coins }),
    makeEvent('coin_received', { receiver: to, amount: coins }),
    makeEvent('transfer', { recipient: to, sender: from, amount: coins }),
  ];
}

/** Genesis / faucet minting: no sender, no events. */
export function mint(state: ChainStores, to: string, amount: bigint): void {
  ensureAccount(state, to);
  state.balances.set(to, balanceOf(state, to) + amount);
}
