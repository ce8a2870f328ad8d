// `gwctl params`: the live inference params the gateway depends on (gateway-spec.md §2.3,
// chain-and-network.md §3.1), with the fee an escrow creation would pay now and the devshard
// protocol versions: approved by the chain, spoken by this gateway, bound by a new escrow
// (devshard-protocol.md §1, §12 #2).
import { computeTxFee, MSG_CREATE_DEVSHARD_ESCROW, queryInferenceParams } from '@gonka-gateway/chain';
import {
  runtimeVersionFor,
  SUPPORTED_PROTOCOL_VERSIONS,
  unsupportedProtocolReason,
} from '@gonka-gateway/devshard/session';
import type { Command } from 'commander';
import type { CliIo } from '../cli-io.js';
import { chainClient, type GlobalOptions, gasSettings } from '../context.js';
import { formatNgonka, printJson, printLines, table } from '../output.js';

export function registerParams(program: Command, io: CliIo): void {
  program
    .command('params')
    .description('show devshard escrow, fee, validation and access params from the chain')
    .option('--gas-limit <gas>', 'gas limit for the fee estimate [env DEVSHARD_TX_GAS_LIMIT; default 700000]')
    .option('--gas-price-floor <ngonka>', 'gas price floor for the fee estimate (default 10)')
    .action(async (_opts: unknown, command: Command) => {
      const opts = command.optsWithGlobals<GlobalOptions & { gasLimit?: string; gasPriceFloor?: string }>();
      const gas = gasSettings(opts, io);
      const p = await queryInferenceParams(chainClient(opts, io));
      const fee = computeTxFee({ typeUrls: [MSG_CREATE_DEVSHARD_ESCROW], feeParams: p.fee, ...gas });
      const e = p.devshardEscrow;
      const protocol = {
        approved: e.approvedVersions.map((v) => v.name),
        supported: SUPPORTED_PROTOCOL_VERSIONS,
        bound: runtimeVersionFor(e.approvedVersions) ?? null,
      };
      if (opts.json) {
        printJson(io.stdout, { ...p, createEscrowFeeEstimate: fee, protocol });
        return;
      }
      const unsupported = unsupportedProtocolReason(e.approvedVersions);
      const lines = [
        'devshard escrow params',
        ...table(
          [
            ['min_amount', formatNgonka(e.minAmount)],
            ['max_amount', formatNgonka(e.maxAmount)],
            ['max_escrows_per_epoch', e.maxEscrowsPerEpoch.toString()],
            ['group_size', String(e.groupSize)],
            ['max_nonce', e.maxNonce.toString()],
            ['token_price', e.tokenPrice.toString()],
            ['create_devshard_fee', formatNgonka(e.createDevshardFee)],
            ['fee_per_nonce', formatNgonka(e.feePerNonce)],
            ['refusal_timeout', `${e.refusalTimeout} s`],
            ['execution_timeout', `${e.executionTimeout} s`],
            ['validation_rate', `${e.validationRate} bp`],
            ['vote_threshold_factor', String(e.voteThresholdFactor)],
            ['devshard_requests_enabled', String(e.devshardRequestsEnabled)],
            ['approved_versions', protocol.approved.join(', ') || '(empty: any version)'],
            [
              'allowed_creator_addresses',
              e.allowedCreatorAddresses.length === 0 ? '(empty: open)' : e.allowedCreatorAddresses.join(', '),
            ],
          ],
          '  ',
        ),
        'protocol versions',
        ...table(
          [
            ['approved by the chain', protocol.approved.join(', ') || '(empty: any version)'],
            ['supported by this gateway', protocol.supported.join(', ')],
            ['a new escrow binds to', protocol.bound ?? `(none: ${unsupported})`],
          ],
          '  ',
        ),
        'fee params',
        ...(p.fee
          ? table(
              [
                ['min_gas_price_ngonka', p.fee.minGasPriceNgonka.toString()],
                ['enabled_fee_groups', p.fee.enabledFeeGroups.join(', ') || '(none)'],
                ...p.fee.groups.map(
                  (g) =>
                    [
                      `group ${g.name}`,
                      `${g.minGasPrice} ngonka/gas: ${g.typeUrls.join(', ') || '(no messages)'}`,
                    ] as const,
                ),
              ],
              '  ',
            )
          : ['  (no fee_params on this chain)']),
        `  create-escrow fee now: ${formatNgonka(fee.amount)} at gas limit ${fee.gasLimit}`,
        'validation params',
        ...table(
          [
            ['timestamp_expiration', `${p.validation.timestampExpiration} s`],
            ['timestamp_advance', `${p.validation.timestampAdvance} s`],
          ],
          '  ',
        ),
        'access',
        ...table(
          [
            [
              'allowed_transfer_addresses',
              p.allowedTransferAddresses.length === 0
                ? '(empty: any participant)'
                : p.allowedTransferAddresses.join(', '),
            ],
            ['developer until_block_height', p.developerAccess.untilBlockHeight.toString()],
            ['allowed_developer_addresses', String(p.developerAccess.allowedDeveloperAddresses.length)],
          ],
          '  ',
        ),
      ];
      printLines(io.stdout, lines);
    });
}
