// `gwctl address` and `gwctl balance [address]` (gateway-spec.md §4 operator reads).
import { BASE_DENOM, isAddress, queryBalances } from '@gonka-gateway/chain';
import type { Command } from 'commander';
import { type CliIo, UsageError } from '../cli-io.js';
import { addKeyOptions, chainClient, type GlobalOptions, type KeyOptions, loadKey } from '../context.js';
import { formatNgonka, printJson } from '../output.js';

export function registerAccount(program: Command, io: CliIo): void {
  addKeyOptions(
    program.command('address').description('print the gonka1… address of the private key'),
  ).action(async (_opts: KeyOptions, command: Command) => {
    const opts = command.optsWithGlobals<GlobalOptions & KeyOptions>();
    const key = await loadKey(opts, io, command);
    if (opts.json) printJson(io.stdout, { address: key.address });
    else io.stdout.write(`${key.address}\n`);
  });

  addKeyOptions(
    program
      .command('balance')
      .description('bank balance of an address (default: the private key address)')
      .argument('[address]', 'gonka1… address'),
  ).action(async (address: string | undefined, _opts: KeyOptions, command: Command) => {
    const opts = command.optsWithGlobals<GlobalOptions & KeyOptions>();
    if (address !== undefined && !isAddress(address))
      throw new UsageError('address must be a gonka1… address');
    const target = address ?? (await loadKey(opts, io, command)).address;
    const coins = await queryBalances(chainClient(opts, io), target);
    const ngonka = coins.find((c) => c.denom === BASE_DENOM)?.amount ?? 0n;
    if (opts.json) {
      printJson(io.stdout, { address: target, denom: BASE_DENOM, amount: ngonka, balances: coins });
      return;
    }
    io.stdout.write(`${target}: ${formatNgonka(ngonka)}\n`);
    for (const c of coins.filter((c) => c.denom !== BASE_DENOM))
      io.stdout.write(`  ${c.amount} ${c.denom}\n`);
  });
}
