// `gwctl admin settle --ids a,b,c | --all-inactive | --depleted | --model m`: the batch settle
// (POST /v1/admin/devshards/settle), read as the NDJSON it streams. Each escrow's line is printed as
// it ends; on a terminal a counter below them shows how far the batch is, otherwise there are only
// the plain lines. A summary ends the output; any escrow that failed (already settled ones do not
// count) makes the exit code non-zero. --json prints the gateway's lines as they are.
import { CliFailure, type CliIo, UsageError } from '../cli-io.js';
import { streamGateway } from '../gateway-client.js';
import { formatNgonka } from '../output.js';

export interface BatchSettleOptions {
  ids?: string;
  model?: string;
  allInactive?: boolean;
  depleted?: boolean;
  batchSize?: string;
  force?: boolean;
  privateKeyEnv: string;
}

interface Summary {
  total: number;
  settled: number;
  already_settled: number;
  failed: number;
  codes: Record<string, number>;
}

/** Whether the command line asks for a batch. */
export function isBatch(o: BatchSettleOptions): boolean {
  return o.ids !== undefined || o.model !== undefined || o.allInactive === true || o.depleted === true;
}

/** The request body; a mistake in the selection is a usage error before anything is sent. */
export function batchBody(o: BatchSettleOptions): Record<string, unknown> {
  const body: Record<string, unknown> = { private_key_env: o.privateKeyEnv };
  if (o.ids !== undefined) {
    if (o.model !== undefined || o.allInactive || o.depleted)
      throw new UsageError('--ids names the escrows: leave out --model, --all-inactive and --depleted');
    const ids = o.ids.split(',').map((s) => s.trim());
    if (ids.some((id) => !/^[1-9][0-9]{0,19}$/.test(id)))
      throw new UsageError('--ids must be positive integers separated by commas');
    body.escrow_ids = ids;
  } else {
    body.filter = {
      ...(o.model !== undefined ? { model: o.model } : {}),
      ...(o.allInactive ? { inactive: true } : {}),
      ...(o.depleted ? { depleted: true } : {}),
    };
  }
  if (o.batchSize !== undefined) {
    const n = Number(o.batchSize);
    if (!Number.isInteger(n) || n < 1) throw new UsageError('--batch-size must be a positive integer');
    body.batch_size = n;
  }
  if (o.force) body.force = true;
  return body;
}

function describe(line: Record<string, unknown>): string {
  if (line.ok === true) {
    const refund = typeof line.refund === 'string' ? `, refund ${formatNgonka(BigInt(line.refund))}` : '';
    return `escrow ${line.escrow_id}: settled (tx ${line.tx_hash ?? 'settled elsewhere'}${refund})`;
  }
  const error = (line.error ?? {}) as { code?: string; message?: string };
  return `escrow ${line.escrow_id}: ${error.code ?? 'failed'}: ${error.message ?? ''}`;
}

export async function runBatchSettle(
  io: CliIo,
  target: { base: string; key: string; json: boolean },
  options: BatchSettleOptions,
): Promise<void> {
  const body = batchBody(options);
  const expected = Array.isArray(body.escrow_ids) ? body.escrow_ids.length : undefined;
  const tty = !target.json && io.stderr.isTTY === true;
  let done = 0;
  let failed = 0;
  let summary: Summary | undefined;
  const counter = () => {
    if (!tty) return;
    const of = expected === undefined ? '' : `/${expected}`;
    const width = 20;
    const bar =
      expected === undefined
        ? ''
        : `[${'#'.repeat(Math.round((done / expected) * width)).padEnd(width, '.')}] `;
    io.stderr.write(`\r\x1b[K${bar}${done}${of} done, ${failed} failed`);
  };
  counter();
  await streamGateway(io, target.base, target.key, 'POST', '/v1/admin/devshards/settle', body, (line) => {
    if (target.json) io.stdout.write(`${JSON.stringify(line)}\n`);
    if ('summary' in line) {
      summary = line.summary as Summary;
      return;
    }
    if ('error' in line && !('escrow_id' in line)) {
      const error = line.error as { message?: string };
      throw new CliFailure(`the batch stopped: ${error.message ?? 'unknown error'}`);
    }
    done++;
    const code = (line.error as { code?: string } | undefined)?.code;
    if (line.ok !== true && code !== 'already_settled') failed++;
    if (!target.json) {
      if (tty) io.stderr.write('\r\x1b[K');
      io.stdout.write(`${describe(line)}\n`);
    }
    counter();
  });
  if (tty) io.stderr.write('\r\x1b[K');
  if (!summary)
    throw new CliFailure('the batch settle ended without its summary; run it again to see where it is');
  if (!target.json) {
    const codes = Object.entries(summary.codes)
      .filter(([code]) => code !== 'already_settled')
      .map(([code, n]) => `${code} ${n}`)
      .join(', ');
    io.stdout.write(
      `settled ${summary.settled}, already settled ${summary.already_settled}, failed ${summary.failed} of ${summary.total}${codes ? ` (${codes})` : ''}\n`,
    );
  }
  if (summary.failed > 0) throw new CliFailure('');
}
