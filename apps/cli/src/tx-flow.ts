// The shared tail of every tx command: print the hash first (so an operator can always reconcile,
// chain-and-network.md §2.4), wait with a progress line on stderr, then report one of the three
// outcomes. `unknown` exits with EXIT.TX_UNKNOWN, never as a failure: the tx may be committed.
import { broadcastAndWait, type ChainClient, type PreparedTx, type TxOutcome } from '@gonka-gateway/chain';
import { CliFailure, type CliIo, EXIT } from './cli-io.js';
import { parseMs } from './context.js';
import { formatNgonka, printJson } from './output.js';

export interface WaitOptions {
  pollIntervalMs?: string;
  waitTimeoutMs?: string;
}

export function addWaitOptions<T extends { option(flags: string, description: string): T }>(command: T): T {
  return command
    .option('--poll-interval-ms <ms>', 'interval between tx lookups (default 2000)')
    .option(
      '--wait-timeout-ms <ms>',
      'how long to wait for inclusion before reporting "unknown" (default 45000)',
    );
}

export function announcePrepared(io: CliIo, tx: PreparedTx, json: boolean): void {
  if (json) {
    printJson(
      io.stdout,
      {
        tx_hash: tx.txHash,
        fee: tx.fee.amount,
        gas_limit: tx.fee.gasLimit,
        timeout_timestamp_ns: tx.timeoutTimestampNs,
      },
      false,
    );
  } else {
    io.stdout.write(`tx_hash: ${tx.txHash}\n`);
    io.stderr.write(`fee ${formatNgonka(tx.fee.amount)} at gas limit ${tx.fee.gasLimit}\n`);
  }
}

export async function sendAndWait(
  client: ChainClient,
  io: CliIo,
  tx: PreparedTx,
  wait: WaitOptions,
): Promise<TxOutcome> {
  const short = `${tx.txHash.slice(0, 12)}…`;
  return broadcastAndWait(client, tx, {
    intervalMs: parseMs(wait.pollIntervalMs, 2_000, '--poll-interval-ms'),
    timeoutMs: parseMs(wait.waitTimeoutMs, 45_000, '--wait-timeout-ms'),
    onBroadcast: (r) => {
      if (r.kind === 'accepted')
        io.stderr.write(`broadcast: accepted by CheckTx, waiting for ${short} to be included\n`);
      else if (r.kind === 'no_answer')
        io.stderr.write(`broadcast: no answer (${r.reason}); polling in case it landed\n`);
      else io.stderr.write(`broadcast: refused by CheckTx (code ${r.code}); checking the chain once\n`);
    },
    onProgress: (p) => {
      const seen = p.last === 'not_found' ? 'not indexed yet' : `lookup error: ${p.last.message}`;
      io.stderr.write(
        `waiting for ${short}: ${seen} (attempt ${p.attempt}, ${Math.round(p.elapsedMs / 1000)} s)\n`,
      );
    },
  });
}

/** Throws a CliFailure for `failed` and `unknown`; returns the included outcome. */
export function requireIncluded(outcome: TxOutcome): Extract<TxOutcome, { status: 'included' }> {
  if (outcome.status === 'included') return outcome;
  if (outcome.status === 'failed') {
    const where =
      outcome.stage === 'check_tx'
        ? 'refused at broadcast (no fee charged)'
        : `failed in block ${outcome.height} (fee charged)`;
    throw new CliFailure(
      `tx ${outcome.txHash} ${where}: code ${outcome.code} ${outcome.codespace}: ${outcome.rawLog}`,
    );
  }
  throw new CliFailure(
    `tx ${outcome.txHash} outcome unknown (${outcome.reason}); it may still be committed — check with: gwctl tx status ${outcome.txHash}`,
    EXIT.TX_UNKNOWN,
  );
}
