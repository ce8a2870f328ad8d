// `gwctl escrow show|create|settle-status` (gateway-spec.md §1.9, §4; chain-and-network.md §2.6).
import {
  BASE_DENOM,
  type ChainClient,
  connectTxSigner,
  type DevshardEscrow,
  effectiveEpochIndex,
  findEscrowCreatedEvents,
  findEscrowSettledEvents,
  type InferenceParams,
  lookupTx,
  type PrivateKey,
  parseUint64,
  queryEscrow,
  queryInferenceParams,
  queryLatestEpoch,
  querySpendableBalance,
} from '@gonka-gateway/chain';
import { unsupportedProtocolReason } from '@gonka-gateway/devshard/session';
import type { Command } from 'commander';
import { CliFailure, type CliIo, UsageError } from '../cli-io.js';
import {
  addKeyOptions,
  chainClient,
  configuredChainId,
  type GlobalOptions,
  gasSettings,
  type KeyOptions,
  loadKey,
  parsePositive,
} from '../context.js';
import { formatNgonka, printJson, printLines, table } from '../output.js';
import {
  addWaitOptions,
  announcePrepared,
  requireIncluded,
  sendAndWait,
  type WaitOptions,
} from '../tx-flow.js';

function parseEscrowId(value: string): bigint {
  try {
    const id = parseUint64(value);
    if (id > 0n) return id;
  } catch {
    // fall through
  }
  throw new UsageError('escrow id must be a positive integer');
}

async function requireEscrow(client: ChainClient, id: bigint): Promise<DevshardEscrow> {
  const { escrow } = await queryEscrow(client, id);
  if (!escrow) throw new CliFailure(`escrow ${id} not found`);
  return escrow;
}

function escrowRows(e: DevshardEscrow): Array<[string, string]> {
  return [
    ['id', e.id.toString()],
    ['creator', e.creator],
    ['amount', formatNgonka(e.amount)],
    ['model_id', e.modelId],
    ['epoch_index', e.epochIndex.toString()],
    ['settled', String(e.settled)],
    ['slots', `${e.slots.length} (${new Set(e.slots).size} distinct validators)`],
    ['token_price', e.tokenPrice.toString()],
    ['create_devshard_fee', formatNgonka(e.createDevshardFee)],
    ['fee_per_nonce', formatNgonka(e.feePerNonce)],
    ['max_nonce', e.maxNonce.toString()],
    ['validation_rate', `${e.validationRate} bp`],
  ];
}

/**
 * Keeper create rules checkable before paying a fee (chain-and-network.md §2.6 Create 1, 3, 7), and a
 * devshard protocol version this gateway speaks among approved_versions (devshard-protocol.md §1).
 */
function createPreflight(
  p: InferenceParams,
  creator: string,
  amount: bigint,
  fee: bigint,
  balance: bigint,
): string[] {
  const e = p.devshardEscrow;
  const problems: string[] = [];
  // This gateway could never serve the escrow: the deposit would wait for a settle by someone else.
  const unsupported = unsupportedProtocolReason(e.approvedVersions);
  if (unsupported) problems.push(unsupported);
  if (e.allowedCreatorAddresses.length > 0 && !e.allowedCreatorAddresses.includes(creator)) {
    problems.push(
      `${creator} is not on devshard_escrow_params.allowed_creator_addresses (only governance can add it)`,
    );
  }
  if (amount < e.minAmount) problems.push(`amount is below min_amount ${formatNgonka(e.minAmount)}`);
  if (e.maxAmount > 0n && amount > e.maxAmount)
    problems.push(`amount is above max_amount ${formatNgonka(e.maxAmount)}`);
  if (balance < amount + fee)
    problems.push(
      `balance ${formatNgonka(balance)} does not cover amount + fee ${formatNgonka(amount + fee)}`,
    );
  return problems;
}

export function registerEscrow(program: Command, io: CliIo): void {
  const escrow = program.command('escrow').description('devshard escrows: show, create, settlement status');

  escrow
    .command('show')
    .description('show an escrow as stored on chain')
    .argument('<id>', 'escrow id')
    .action(async (idText: string, _opts: unknown, command: Command) => {
      const opts = command.optsWithGlobals<GlobalOptions>();
      const e = await requireEscrow(chainClient(opts, io), parseEscrowId(idText));
      if (opts.json) printJson(io.stdout, e);
      else printLines(io.stdout, table(escrowRows(e)));
    });

  const create = escrow
    .command('create')
    .description(
      'create an escrow: prints the tx hash first, then waits for inclusion and prints the escrow id',
    )
    .requiredOption('--amount <ngonka>', 'deposit in ngonka (integer; 1 GNK = 1000000000)')
    .requiredOption('--model <id>', 'model id, e.g. Qwen/Qwen3-235B-A22B-Instruct-2507-FP8')
    .option('--gas-limit <gas>', 'gas limit [env DEVSHARD_TX_GAS_LIMIT; default 700000]')
    .option(
      '--gas-price-floor <ngonka>',
      'minimum ngonka per gas paid whatever the fee params say (default 10)',
    )
    .option('--skip-checks', 'skip the allowlist/amount/balance/protocol-version checks made before signing')
    .option('--dry-run', 'sign and print the tx hash and fee, but do not broadcast');
  addWaitOptions(addKeyOptions(create)).action(async (_opts: unknown, command: Command) => {
    type Opts = GlobalOptions &
      KeyOptions &
      WaitOptions & {
        amount: string;
        model: string;
        gasLimit?: string;
        gasPriceFloor?: string;
        skipChecks?: boolean;
        dryRun?: boolean;
      };
    const opts = command.optsWithGlobals<Opts>();
    const amount = parsePositive(opts.amount.replace(/ngonka$/, ''), '--amount');
    if (opts.model.trim() === '') throw new UsageError('--model must not be empty');
    const gas = gasSettings(opts, io);
    const key: PrivateKey = await loadKey(opts, io, command);
    const client = chainClient(opts, io);
    const params = await queryInferenceParams(client);
    const signer = await connectTxSigner(client, key, {
      ...gas,
      chainId: configuredChainId(opts, io),
      nowNs: io.nowNs,
    });
    const tx = signer.prepareCreateEscrow({ amount, modelId: opts.model }, params.fee);
    if (!opts.skipChecks) {
      // Spendable, not bank balance: locked (vesting) funds cannot pay a deposit (keeper rule 7).
      const balance = await querySpendableBalance(client, key.address, BASE_DENOM);
      const problems = createPreflight(params, key.address, amount, tx.fee.amount, balance);
      if (problems.length > 0)
        throw new CliFailure(`not sent: ${problems.join('; ')} (use --skip-checks to send anyway)`);
    }
    announcePrepared(io, tx, !!opts.json);
    if (opts.dryRun) {
      io.stderr.write('dry run: not broadcast\n');
      return;
    }
    const included = requireIncluded(await sendAndWait(client, io, tx, opts));
    const created = findEscrowCreatedEvents(included.events)[0];
    if (!created) {
      throw new CliFailure(
        `tx ${tx.txHash} was included at height ${included.height} but has no devshard_escrow_created event`,
      );
    }
    if (opts.json)
      printJson(
        io.stdout,
        { status: 'included', tx_hash: tx.txHash, height: included.height, escrow_id: created.escrowId },
        false,
      );
    else io.stdout.write(`escrow_id: ${created.escrowId}\nheight: ${included.height}\n`);
  });

  escrow
    .command('settle-status')
    .description('whether an escrow is settled, its settlement window, and (with --tx) the settlement event')
    .argument('<id>', 'escrow id')
    .option('--tx <hash>', 'settlement tx hash: show its devshard_escrow_settled event')
    .action(async (idText: string, _opts: unknown, command: Command) => {
      const opts = command.optsWithGlobals<GlobalOptions & { tx?: string }>();
      const client = chainClient(opts, io);
      const e = await requireEscrow(client, parseEscrowId(idText));
      // Settle rule 9 (§2.6): allowed while the current epoch is the escrow's epoch or the next one.
      let currentEpoch: bigint | null = null;
      try {
        currentEpoch = effectiveEpochIndex(await queryLatestEpoch(client));
      } catch (err) {
        io.stderr.write(`warning: epoch unknown (${(err as Error).message})\n`);
      }
      const window = e.settled
        ? 'settled'
        : currentEpoch === null
          ? 'unknown'
          : currentEpoch <= e.epochIndex + 1n
            ? 'open'
            : 'closed';
      let event: ReturnType<typeof findEscrowSettledEvents>[number] | null = null;
      let txStatus: string | null = null;
      if (opts.tx !== undefined) {
        const lookup = await lookupTx(client, opts.tx);
        if (lookup.kind === 'found') {
          txStatus = lookup.outcome.status;
          if (lookup.outcome.status === 'included') {
            event = findEscrowSettledEvents(lookup.outcome.events).find((s) => s.escrowId === e.id) ?? null;
          }
        } else txStatus = lookup.kind === 'not_found' ? 'not found' : `lookup error: ${lookup.error.message}`;
      }
      const result = {
        escrow_id: e.id,
        settled: e.settled,
        epoch_index: e.epochIndex,
        current_epoch: currentEpoch,
        settle_window: window,
        settle_by_epoch: e.epochIndex + 1n,
        tx_status: txStatus,
        settled_event: event,
      };
      if (opts.json) {
        printJson(io.stdout, result);
        return;
      }
      const rows: Array<[string, string]> = [
        ['escrow', e.id.toString()],
        ['settled', String(e.settled)],
        [
          'epoch',
          `${e.epochIndex} (settle no later than epoch ${e.epochIndex + 1n}; current ${currentEpoch ?? 'unknown'})`,
        ],
        ['window', window],
      ];
      if (txStatus !== null) rows.push(['settle tx', txStatus]);
      if (event) {
        rows.push(
          ['settler', event.settler],
          ['version', event.stateRootAndProtocolVersion],
          ['total_payout', formatNgonka(event.totalPayout)],
          ['fees', formatNgonka(event.fees)],
          ['remainder', formatNgonka(event.remainder)],
        );
      }
      printLines(io.stdout, table(rows));
    });
}
