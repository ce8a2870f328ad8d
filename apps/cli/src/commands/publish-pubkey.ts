// `gwctl publish-pubkey` (chain-and-network.md §5): a 1-ngonka self-send records the account's public
// key on chain, which nodes require before accepting direct requests.
import {
  BASE_DENOM,
  connectTxSigner,
  queryAccount,
  queryBalance,
  queryInferenceParams,
} from '@gonka-gateway/chain';
import type { Command } from 'commander';
import { CliFailure, type CliIo } from '../cli-io.js';
import {
  addKeyOptions,
  chainClient,
  configuredChainId,
  type GlobalOptions,
  gasSettings,
  type KeyOptions,
  loadKey,
} from '../context.js';
import { formatNgonka, printJson } from '../output.js';
import {
  addWaitOptions,
  announcePrepared,
  requireIncluded,
  sendAndWait,
  type WaitOptions,
} from '../tx-flow.js';

export function registerPublishPubkey(program: Command, io: CliIo): void {
  const command = program
    .command('publish-pubkey')
    .description('publish the account public key on chain with a 1 ngonka self-send')
    .option('--force', 'send even if the chain already shows a public key')
    .option('--gas-limit <gas>', 'gas limit [env DEVSHARD_TX_GAS_LIMIT; default 700000]')
    .option('--gas-price-floor <ngonka>', 'minimum ngonka per gas (default 10)');
  addWaitOptions(addKeyOptions(command)).action(async (_opts: unknown, cmd: Command) => {
    const opts = cmd.optsWithGlobals<
      GlobalOptions &
        KeyOptions &
        WaitOptions & { force?: boolean; gasLimit?: string; gasPriceFloor?: string }
    >();
    const gas = gasSettings(opts, io);
    const key = await loadKey(opts, io, cmd);
    const client = chainClient(opts, io);
    const account = await queryAccount(client, key.address);
    if (!account) throw new CliFailure(`account ${key.address} does not exist on chain: fund it first`);
    if (account.pubKey && !opts.force) {
      if (opts.json) printJson(io.stdout, { address: key.address, published: true, sent: false });
      else io.stdout.write(`public key of ${key.address} is already published\n`);
      return;
    }
    const [params, signer] = await Promise.all([
      queryInferenceParams(client),
      connectTxSigner(client, key, { ...gas, chainId: configuredChainId(opts, io), nowNs: io.nowNs }),
    ]);
    const tx = signer.preparePublishPubkey(params.fee);
    const balance = await queryBalance(client, key.address, BASE_DENOM);
    if (balance < tx.fee.amount + 1n) {
      throw new CliFailure(
        `balance ${formatNgonka(balance)} does not cover fee + 1 ngonka (${formatNgonka(tx.fee.amount + 1n)})`,
      );
    }
    announcePrepared(io, tx, !!opts.json);
    const included = requireIncluded(await sendAndWait(client, io, tx, opts));
    if (opts.json)
      printJson(
        io.stdout,
        { status: 'included', tx_hash: tx.txHash, height: included.height, published: true },
        false,
      );
    else io.stdout.write(`published at height ${included.height}\n`);
  });
}
