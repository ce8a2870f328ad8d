// Routes a decoded message to its handler and adds the `message` event the SDK emits for each.
import { MSG_CREATE_DEVSHARD_ESCROW, MSG_SETTLE_DEVSHARD_ESCROW } from '@gonka-gateway/chain';
import { executeBankSend } from './bank-send.js';
import { executeCreateEscrow } from './create-escrow.js';
import type { DecodedMsg } from './decode-tx.js';
import { makeEvent, type TxEvent, withMsgIndex } from './events.js';
import type { ExecEnv } from './exec-env.js';
import { MSG_SEND } from './params.js';
import { executeSettleEscrow } from './settle-escrow.js';
import type { StateTx } from './stores.js';

export function executeMessage(state: StateTx, msg: DecodedMsg, index: number, env: ExecEnv): TxEvent[] {
  const module = msg.typeUrl === MSG_SEND ? 'bank' : 'inference';
  const header = makeEvent('message', { action: msg.typeUrl, sender: msg.signer, module });
  let events: TxEvent[];
  switch (msg.typeUrl) {
    case MSG_SEND:
      events = executeBankSend(state, msg.value, env);
      break;
    case MSG_CREATE_DEVSHARD_ESCROW:
      events = executeCreateEscrow(state, msg.value, env);
      break;
    case MSG_SETTLE_DEVSHARD_ESCROW:
      events = executeSettleEscrow(state, msg.value, env);
      break;
  }
  return withMsgIndex([header, ...events], index);
}
