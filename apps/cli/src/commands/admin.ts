// `gwctl admin …`: the gateway's admin API (spec §4) from the operator's shell, with the admin key
// read from DEVSHARD_ADMIN_API_KEY (--admin-key-env names another variable): list and show escrows,
// create one (the controller signs with the key variable it is told, private_key_env), finalize,
// settle one (optionally waiting until the chain says settled) or many (settle-batch.ts), and set a
// model's access mode.
import { queryChainId } from '@gonka-gateway/chain';
import type { Command } from 'commander';
import { CliFailure, type CliIo, UsageError } from '../cli-io.js';
import { chainClient, configuredChainId, type GlobalOptions, parseMs, parsePositive } from '../context.js';
import {
  addGatewayOptions,
  callGateway,
  DEFAULT_MODEL,
  type GatewayOptions,
  gatewayUrl,
  keyFromEnv,
} from '../gateway-client.js';
import { formatNgonka, printJson, printLines, table } from '../output.js';
import { type BatchSettleOptions, isBatch, runBatchSettle } from './settle-batch.js';

type AdminOptions = GlobalOptions & GatewayOptions;

interface EscrowView {
  escrow_id: number;
  model_id: string;
  state: string;
  active: boolean;
  amount?: string;
  [field: string]: unknown;
}

function escrowId(value: string): string {
  if (!/^[1-9][0-9]{0,19}$/.test(value)) throw new UsageError('escrow id must be a positive integer');
  return value;
}

function admin(command: Command, io: CliIo) {
  const opts = command.optsWithGlobals<AdminOptions>();
  const base = gatewayUrl(opts, io);
  const key = keyFromEnv(io, opts.adminKeyEnv ?? 'DEVSHARD_ADMIN_API_KEY');
  return {
    opts,
    base,
    key,
    call: (method: string, path: string, body?: object) => callGateway(io, base, key, method, path, body),
  };
}

function escrowLines(e: EscrowView): string[] {
  return table(
    Object.entries(e)
      .filter(([, v]) => v !== null && v !== undefined && typeof v !== 'object')
      .map(([k, v]) => [
        k,
        k === 'amount' && typeof v === 'string' && /^\d+$/.test(v) ? formatNgonka(BigInt(v)) : String(v),
      ]),
  );
}

export function registerAdmin(program: Command, io: CliIo): void {
  const group = program
    .command('admin')
    .description('the gateway admin API (key from $DEVSHARD_ADMIN_API_KEY)')
    .option('--admin-key-env <name>', 'environment variable holding the admin key', 'DEVSHARD_ADMIN_API_KEY');
  addGatewayOptions(group);

  group
    .command('devshards')
    .description('list the registered escrows (GET /v1/admin/devshards)')
    .action(async (_o: unknown, command: Command) => {
      const { opts, call } = admin(command, io);
      const { body } = await call('GET', '/v1/admin/devshards');
      const rows = (body.data as EscrowView[]) ?? [];
      if (opts.json) return printJson(io.stdout, rows);
      if (rows.length === 0) return printLines(io.stdout, ['(no escrow registered)']);
      printLines(
        io.stdout,
        rows.map((r) => `${r.escrow_id}\t${r.state}\t${r.active ? 'routed' : 'not routed'}\t${r.model_id}`),
      );
    });

  group
    .command('devshard <id>')
    .description('one registered escrow (GET /v1/admin/devshards/{id})')
    .action(async (id: string, _o: unknown, command: Command) => {
      const { opts, call } = admin(command, io);
      const { body } = await call('GET', `/v1/admin/devshards/${escrowId(id)}`);
      if (opts.json) return printJson(io.stdout, body);
      printLines(io.stdout, escrowLines(body as EscrowView));
    });

  group
    .command('create-escrow')
    .description('open an escrow on chain through the gateway and register it (POST /v1/admin/escrows)')
    .requiredOption('--amount <ngonka>', 'deposit in ngonka (1 GNK = 1000000000)')
    .option('--model <id>', 'model the escrow serves', DEFAULT_MODEL)
    .option(
      '--private-key-env <name>',
      "the controller's variable holding the creator key",
      'DEVSHARD_PRIVATE_KEY',
    )
    .option('--no-register', 'create on chain only (import it later)')
    .option('--idempotency-key <key>', 'a retried call with the same key creates nothing new')
    .action(async (_o: unknown, command: Command) => {
      const { opts, call } = admin(command, io);
      const o = command.opts<{
        amount: string;
        model: string;
        privateKeyEnv: string;
        register: boolean;
      }>();
      const amount = parsePositive(o.amount, '--amount');
      const chainId = configuredChainId(opts, io) ?? (await queryChainId(chainClient(opts, io)));
      const { body } = await call('POST', '/v1/admin/escrows', {
        amount: amount.toString(),
        model_id: o.model,
        chain_id: chainId,
        private_key_env: o.privateKeyEnv,
        register: o.register,
      });
      if (opts.json) return printJson(io.stdout, body);
      printLines(io.stdout, [
        `escrow_id: ${body.escrow_id}`,
        `tx_hash: ${body.tx_hash}`,
        `registered: ${body.registered}`,
      ]);
    });

  group
    .command('finalize <id>')
    .description(
      'finalize an escrow off chain and print its finalize document (POST /devshard/{id}/v1/finalize)',
    )
    .action(async (id: string, _o: unknown, command: Command) => {
      const { call } = admin(command, io);
      const { body } = await call('POST', `/devshard/${escrowId(id)}/v1/finalize`);
      printJson(io.stdout, body);
    });

  group
    .command('settle [id]')
    .description(
      'settle an escrow on chain, or many (--ids, --all-inactive, --depleted, --model); the unused deposit returns to the creator (POST /v1/admin/devshards/{id}/settle, /v1/admin/devshards/settle)',
    )
    .option(
      '--private-key-env <name>',
      "the controller's variable holding the creator key",
      'DEVSHARD_PRIVATE_KEY',
    )
    .option('--force', 'cut requests in flight instead of waiting for them')
    .option('--wait', 'poll until the escrow is settled (one escrow)')
    .option('--wait-timeout-ms <ms>', 'how long --wait polls', '120000')
    .option('--ids <ids>', 'batch: these escrows (comma-separated)')
    .option('--all-inactive', 'batch: every unsettled escrow whose routing is off')
    .option('--depleted', 'batch: every unsettled escrow the balance check marked depleted')
    .option('--model <id>', 'batch: only escrows of this model (alone: all of its unsettled escrows)')
    .option('--batch-size <n>', 'batch: escrows settled at once (gateway default 4, at most 16)')
    .action(async (id: string | undefined, _o: unknown, command: Command) => {
      const { opts, base, key, call } = admin(command, io);
      const o = command.opts<
        BatchSettleOptions & { privateKeyEnv: string; wait?: boolean; waitTimeoutMs: string }
      >();
      if (isBatch(o)) {
        if (id !== undefined) throw new UsageError('give an escrow id or a batch selection, not both');
        if (o.wait) throw new UsageError('--wait is for one escrow; a batch reports each escrow as it ends');
        return runBatchSettle(io, { base, key, json: opts.json === true }, o);
      }
      if (id === undefined)
        throw new UsageError('name the escrow: an id, or --ids, --all-inactive, --depleted or --model');
      const path = `/v1/admin/devshards/${escrowId(id)}`;
      const { body } = await call('POST', `${path}/settle`, {
        private_key_env: o.privateKeyEnv,
        ...(o.force ? { force: true } : {}),
      });
      if (!o.wait) {
        if (opts.json) return printJson(io.stdout, body);
        return printLines(io.stdout, [`settle queued: job ${body.job_id} (escrow ${id}, ${body.state})`]);
      }
      io.stderr.write(`settle queued (job ${body.job_id}); waiting…\n`);
      const deadline = Date.now() + parseMs(o.waitTimeoutMs, 120_000, '--wait-timeout-ms');
      for (;;) {
        const view = (await call('GET', path)).body as EscrowView;
        if (view.state === 'settled') {
          if (opts.json) return printJson(io.stdout, view);
          return printLines(io.stdout, [`escrow ${id} settled`, ...escrowLines(view)]);
        }
        if (Date.now() > deadline)
          throw new CliFailure(
            `escrow ${id} is ${view.state} after waiting; check again with gwctl admin devshard ${id}`,
          );
        await new Promise((r) => setTimeout(r, 1_000));
      }
    });

  group
    .command('access <model> <mode>')
    .description(
      "set a model's access mode: api_key (user keys may chat) or admin_only (POST /v1/admin/settings)",
    )
    .action(async (model: string, mode: string, _o: unknown, command: Command) => {
      if (mode !== 'api_key' && mode !== 'admin_only')
        throw new UsageError('mode must be api_key or admin_only');
      const { opts, call } = admin(command, io);
      const current = (await call('GET', '/v1/admin/settings')).body;
      const limits = ((current.model_limits as { model_id: string }[]) ?? []).filter(
        (m) => m.model_id !== model,
      );
      const { body } = await call('POST', '/v1/admin/settings', {
        model_limits: [...limits, { model_id: model, access_mode: mode }],
      });
      if (opts.json) return printJson(io.stdout, body.model_limits);
      printLines(io.stdout, [`${model}: ${mode}`]);
    });
}
