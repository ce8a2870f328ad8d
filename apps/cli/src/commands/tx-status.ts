// `gwctl tx status <hash>`: reconcile a tx whose outcome was reported as unknown
// (chain-and-network.md §2.4: keep a not-found hash until its timeout timestamp has passed).
import { lookupTx, pollTx, type TxOutcome } from '@gonka-gateway/chain';
import type { Command } from 'commander';
import { CliFailure, type CliIo, EXIT, UsageError } from '../cli-io.js';
import { chainClient, type GlobalOptions, parseMs } from '../context.js';
import { printJson, printLines, table } from '../output.js';

function describe(outcome: TxOutcome): Array<[string, string]> {
  if (outcome.status === 'included')
    return [
      ['status', 'included'],
      ['height', outcome.height.toString()],
      ['gas_used', outcome.gasUsed.toString()],
    ];
  if (outcome.status === 'failed') {
    return [
      ['status', `failed (${outcome.stage})`],
      ['code', `${outcome.code} ${outcome.codespace}`],
      ['raw_log', outcome.rawLog],
    ];
  }
  return [
    ['status', 'unknown'],
    ['reason', outcome.reason],
  ];
}

export function registerTxStatus(program: Command, io: CliIo): void {
  const tx = program.command('tx').description('transactions');
  tx.command('status')
    .description('look a tx up by hash: included, failed, or not found (yet)')
    .argument('<hash>', '64 hex characters')
    .option('--wait', 'poll until it is found or --wait-timeout-ms passes')
    .option('--poll-interval-ms <ms>', 'interval between lookups (default 2000)')
    .option('--wait-timeout-ms <ms>', 'how long --wait polls (default 45000)')
    .action(async (hash: string, _opts: unknown, command: Command) => {
      const opts = command.optsWithGlobals<
        GlobalOptions & { wait?: boolean; pollIntervalMs?: string; waitTimeoutMs?: string }
      >();
      if (!/^[0-9a-fA-F]{64}$/.test(hash)) throw new UsageError('tx hash must be 64 hex characters');
      const client = chainClient(opts, io);
      let outcome: TxOutcome;
      if (opts.wait) {
        outcome = await pollTx(client, hash, {
          intervalMs: parseMs(opts.pollIntervalMs, 2_000, '--poll-interval-ms'),
          timeoutMs: parseMs(opts.waitTimeoutMs, 45_000, '--wait-timeout-ms'),
        });
      } else {
        const lookup = await lookupTx(client, hash);
        if (lookup.kind === 'error') throw lookup.error;
        outcome =
          lookup.kind === 'found'
            ? lookup.outcome
            : {
                status: 'unknown',
                txHash: hash.toUpperCase(),
                reason: 'not found (not indexed yet, or never landed)',
                timeoutTimestampNs: null,
              };
      }
      if (opts.json)
        printJson(io.stdout, outcome.status === 'included' ? { ...outcome, response: undefined } : outcome);
      else printLines(io.stdout, table([['tx', outcome.txHash], ...describe(outcome)]));
      if (outcome.status === 'failed') throw new CliFailure('', EXIT.ERROR);
      if (outcome.status === 'unknown') throw new CliFailure('', EXIT.TX_UNKNOWN);
    });
}
