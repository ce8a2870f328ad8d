// The three outcomes of sending a transaction (chain-and-network.md §2.4). `unknown` is never a
// failure: the tx may still be (or already be) committed, so the caller keeps its hash and checks
// again until `timeoutTimestampNs` (plus a margin) has passed, after which it can no longer land.
import type { TxEvent } from './events.js';
import type { TxResponse } from './tx-response.js';

export interface TxIncluded {
  status: 'included';
  txHash: string;
  height: bigint;
  gasUsed: bigint;
  events: TxEvent[];
  response: TxResponse;
}

export interface TxFailed {
  status: 'failed';
  txHash: string;
  /** `check_tx`: the node refused it at broadcast; `deliver_tx`: committed with code != 0 (fee paid). */
  stage: 'check_tx' | 'deliver_tx';
  code: number;
  codespace: string;
  rawLog: string;
  /** Block height for `deliver_tx`, null for `check_tx`. */
  height: bigint | null;
}

export interface TxUnknown {
  status: 'unknown';
  txHash: string;
  /** Why no answer was reached (no index entry before the poll deadline, unreachable node, …). */
  reason: string;
  /** The tx's timeout timestamp when known: past it (plus a margin) the tx cannot be included. */
  timeoutTimestampNs: bigint | null;
}

export type TxOutcome = TxIncluded | TxFailed | TxUnknown;

export function outcomeFromResponse(txHash: string, r: TxResponse): TxIncluded | TxFailed {
  if (r.code === 0) {
    return {
      status: 'included',
      txHash,
      height: r.height,
      gasUsed: r.gasUsed,
      events: r.events,
      response: r,
    };
  }
  return {
    status: 'failed',
    txHash,
    stage: 'deliver_tx',
    code: r.code,
    codespace: r.codespace,
    rawLog: r.rawLog,
    height: r.height,
  };
}
