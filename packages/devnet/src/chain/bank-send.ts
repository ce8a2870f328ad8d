// bank MsgSend. `inferenced publish-pubkey` is a 1 ngonka self-send (chain-and-network.md §5); the
// pubkey itself is recorded by the ante handler for any first signed tx, so this handler only moves
// coins. Module accounts are blocked recipients, as in x/bank.
import { isAddress } from '@gonka-gateway/chain';
import type { MsgSend } from 'cosmjs-types/cosmos/bank/v1beta1/tx';
import { DENOM, transfer } from './bank.js';
import { SdkErrors } from './errors.js';
import { makeEvent, type TxEvent } from './events.js';
import type { ExecEnv } from './exec-env.js';
import type { StateTx } from './stores.js';

export function executeBankSend(state: StateTx, msg: MsgSend, env: ExecEnv): TxEvent[] {
  if (!isAddress(msg.toAddress))
    throw SdkErrors.invalidAddress(`invalid to address ${JSON.stringify(msg.toAddress)}`);
  if (msg.amount.length === 0) throw SdkErrors.invalidCoins('send amount must be positive');
  let amount = 0n;
  for (const coin of msg.amount) {
    if (!/^[0-9]+$/.test(coin.amount) || BigInt(coin.amount) === 0n) {
      throw SdkErrors.invalidCoins(`invalid coin ${coin.amount}${coin.denom}`);
    }
    if (coin.denom !== DENOM) {
      throw SdkErrors.insufficientFunds(
        `spendable balance 0${coin.denom} is smaller than ${coin.amount}${coin.denom}`,
      );
    }
    amount += BigInt(coin.amount);
  }
  if (state.accounts.get(msg.toAddress)?.moduleName) {
    throw SdkErrors.unauthorized(`${msg.toAddress} is not allowed to receive funds`);
  }
  const events = transfer(state, env.chain.faults, msg.fromAddress, msg.toAddress, amount);
  return [...events, makeEvent('message', { sender: msg.fromAddress })];
}
