// Broadcast a prepared tx, then resolve its outcome (chain-and-network.md §2.4). The hash was known
// (and should have been persisted) before this is called; nothing here throws once the tx has left
// the process, because from then on it may be committed:
//  - accepted by CheckTx            → poll → included | failed(deliver_tx) | unknown
//  - no answer (dropped, timeout)   → poll: the node may have taken it before the connection broke
//  - refused by CheckTx             → one lookup (a re-broadcast of an already committed tx is
//                                     refused too) → that outcome, or failed(check_tx), or unknown
import { ChainError } from '../errors.js';
import type { ChainClient } from '../http/chain-client.js';
import { type BroadcastResult, broadcastTx } from './broadcast.js';
import { lookupTx, type PollOptions, pollTx } from './poll-tx.js';
import { txHash as hashOf } from './tx-hash.js';
import type { TxOutcome } from './tx-outcome.js';

export interface BroadcastableTx {
  txBytes: Uint8Array;
  txHash: string;
  timeoutTimestampNs?: bigint;
}

export interface BroadcastAndWaitOptions extends Omit<PollOptions, 'timeoutTimestampNs'> {
  onBroadcast?: (result: BroadcastResult) => void;
}

export async function broadcastAndWait(
  client: ChainClient,
  tx: BroadcastableTx,
  options: BroadcastAndWaitOptions = {},
): Promise<TxOutcome> {
  const hash = tx.txHash.toUpperCase();
  // The caller persisted `txHash` to reconcile later; it must be the hash of the bytes we send.
  if (hashOf(tx.txBytes) !== hash) {
    throw new ChainError('CHAIN_ERR_INVALID_ARGUMENT', { detail: 'txHash is not the SHA-256 of txBytes' });
  }
  const timeoutTimestampNs = tx.timeoutTimestampNs ?? null;
  const result = await broadcastTx(client, tx.txBytes, { signal: options.signal });
  options.onBroadcast?.(result);
  const poll = () => pollTx(client, hash, { ...options, timeoutTimestampNs: tx.timeoutTimestampNs });

  if (result.kind === 'accepted') {
    const outcome = await poll();
    if (outcome.status === 'unknown' && result.txHash !== '' && result.txHash !== hash) {
      outcome.reason += `; the node reported hash ${result.txHash}`;
    }
    return outcome;
  }
  if (result.kind === 'no_answer') {
    const outcome = await poll();
    if (outcome.status === 'unknown') outcome.reason += `; broadcast got no answer: ${result.reason}`;
    return outcome;
  }
  let lookup: Awaited<ReturnType<typeof lookupTx>>;
  try {
    lookup = await lookupTx(client, hash, options.signal);
  } catch (err) {
    lookup = {
      kind: 'error',
      error: err instanceof ChainError ? err : new ChainError('CHAIN_ERR_UNREACHABLE'),
    };
  }
  if (lookup.kind === 'found') return lookup.outcome;
  if (lookup.kind === 'not_found') {
    return {
      status: 'failed',
      txHash: hash,
      stage: 'check_tx',
      code: result.code,
      codespace: result.codespace,
      rawLog: result.rawLog,
      height: null,
    };
  }
  return {
    status: 'unknown',
    txHash: hash,
    reason: `CheckTx refused the tx (code ${result.code} ${result.codespace}: ${result.rawLog}) and the follow-up lookup failed: ${lookup.error.message}`,
    timeoutTimestampNs,
  };
}
