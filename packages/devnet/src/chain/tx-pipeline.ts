// One tx through ante and messages, on branches of a parent state: the ante branch (fee, pubkey,
// nonce, sequence) and, inside it, the message branch. The caller commits what its mode keeps:
// CheckTx keeps only accepted ante writes (and only in the check state), DeliverTx keeps ante writes
// whenever ante passed (the fee is charged even if a message fails) and message writes on success.
import { runAnte } from './ante.js';
import type { DecodedTx } from './decode-tx.js';
import { SdkErrors, TxError } from './errors.js';
import type { TxEvent, TxResult } from './events.js';
import type { ExecEnv } from './exec-env.js';
import { anteGas, messageGas } from './fees.js';
import { executeMessage } from './messages.js';
import { type ChainStores, StateTx } from './stores.js';

export interface TxRun {
  result: TxResult;
  /** Ante branch; null when ante failed. */
  ante: StateTx | null;
  /** Message branch (child of `ante`); null when a message failed. */
  messages: StateTx | null;
}

function failure(err: unknown, gasWanted: bigint, gasUsed: bigint, prefix = ''): TxResult {
  if (!(err instanceof TxError)) throw err; // a devnet bug, not a tx outcome: let it surface
  return {
    code: err.code,
    codespace: err.codespace,
    rawLog: `${prefix}${err.message}`,
    events: [],
    gasWanted,
    gasUsed,
  };
}

export function runTx(parent: ChainStores, tx: DecodedTx, env: ExecEnv): TxRun {
  const gasWanted = tx.gasLimit;
  let gasUsed = anteGas(tx);
  const ante = new StateTx(parent);
  let anteEvents: TxEvent[];
  try {
    anteEvents = runAnte(ante, tx, env);
  } catch (err) {
    return { result: failure(err, gasWanted, gasUsed), ante: null, messages: null };
  }

  const messages = ante.branch();
  const msgEvents: TxEvent[] = [];
  for (const [index, msg] of tx.messages.entries()) {
    try {
      msgEvents.push(...executeMessage(messages, msg, index, env));
      gasUsed += messageGas(msg);
      if (env.mode !== 'simulate' && gasUsed > gasWanted) {
        throw SdkErrors.outOfGas(
          `out of gas in location: ${msg.typeUrl}; gasWanted: ${gasWanted}, gasUsed: ${gasUsed}`,
        );
      }
    } catch (err) {
      const result = failure(err, gasWanted, gasUsed, `failed to execute message; message index: ${index}: `);
      // The fee was charged, so a failed tx still reports the ante events.
      return { result: { ...result, events: anteEvents }, ante, messages: null };
    }
  }
  return {
    result: { code: 0, codespace: '', rawLog: '', events: [...anteEvents, ...msgEvents], gasWanted, gasUsed },
    ante,
    messages,
  };
}
