// gwctl, the operator CLI, as a function: `runCli(argv, io)` returns the exit code, so tests drive it
// in-process and main.ts stays a thin wrapper. Each call builds its own commander program (no
// module-level state). Errors print one line on stderr; secrets never appear in output except from
// `keys new`, whose purpose is to print fresh keys.
import { isChainError } from '@gonka-gateway/chain';
import { Command, CommanderError } from 'commander';
import { redactKeyShaped, refuseSecretsInArgv } from './argv-guard.js';
import { CliFailure, type CliIo, EXIT, UsageError } from './cli-io.js';
import { registerAccount } from './commands/account.js';
import { registerAdmin } from './commands/admin.js';
import { registerChat } from './commands/chat.js';
import { registerDirectRequests } from './commands/direct-requests.js';
import { registerEscrow } from './commands/escrow.js';
import { registerKeys } from './commands/keys.js';
import { registerParams } from './commands/params.js';
import { registerPublishPubkey } from './commands/publish-pubkey.js';
import { registerTxStatus } from './commands/tx-status.js';
import { addGlobalOptions } from './context.js';

export function buildProgram(io: CliIo): Command {
  const program = new Command('gwctl')
    .description(
      'Operator CLI of the Gonka inference gateway: keys, chain queries, escrows, signed direct requests, the admin API',
    )
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(redactKeyShaped(s)),
      outputError: (s, write) => write(redactKeyShaped(s)),
    })
    .showHelpAfterError('(add --help for usage)');
  addGlobalOptions(program);
  registerKeys(program, io);
  registerAccount(program, io);
  registerParams(program, io);
  registerEscrow(program, io);
  registerPublishPubkey(program, io);
  registerTxStatus(program, io);
  registerDirectRequests(program, io);
  registerAdmin(program, io);
  registerChat(program, io);
  return program;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    refuseSecretsInArgv(argv, io.env);
    await buildProgram(io).parseAsync([...argv], { from: 'user' });
    return EXIT.OK;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version exit 0; parse errors were already printed by commander.
      return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    }
    if (err instanceof UsageError) {
      io.stderr.write(`gwctl: ${oneLine(err.message)}\n`);
      return EXIT.USAGE;
    }
    if (err instanceof CliFailure) {
      if (err.message !== '') io.stderr.write(`gwctl: ${oneLine(err.message)}\n`);
      return err.exitCode;
    }
    if (isChainError(err)) {
      const hint = err.hint ? ` (hint: ${err.hint})` : '';
      io.stderr.write(`gwctl: ${oneLine(err.message)} [${err.code}]${hint}\n`);
      return EXIT.ERROR;
    }
    // Unexpected: report the message only (never a stack with local values).
    io.stderr.write(
      `gwctl: unexpected error: ${oneLine(err instanceof Error ? err.message : String(err))}\n`,
    );
    return EXIT.ERROR;
  }
}
