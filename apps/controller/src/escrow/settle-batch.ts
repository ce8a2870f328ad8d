// Batch settle (POST /v1/admin/devshards/settle, apps/controller README "Batch settle"): many escrows
// settled `batchSize` at a time, each through its own settle flow (jobs/settle-run.ts: the job ids are
// the escrow's, so a second batch or a retry joins the same flow and nothing is settled twice). Each
// escrow is pre-checked first — registered, not settled, the key is its creator's, no request in
// flight or held (unless `force`), the settler can still pay the fee after the settles before it —
// so what cannot work is reported at once and never drained. One result per escrow is handed to
// `emit` as it ends, then the summary. The work belongs to the controller, not to the HTTP
// connection: a client that leaves stops only the lines.
import { findEscrowSettledEvents, lookupTx, type PrivateKey } from '@gonka-gateway/chain';
import { escrowTable } from '@gonka-gateway/shared';
import type { SettleErrorCode, SettleLine, SettleSummary } from '../admin-api.js';
import type { ControllerContext } from '../controller-context.js';
import type { ControllerJobs } from '../jobs/workers.js';
import { inFlightCount } from './pool-status.js';
import { describeShortfall, type SettleFeeBudget } from './settle-fee.js';

export interface SettleFilter {
  model?: string;
  inactive?: boolean;
  depleted?: boolean;
}

export interface SettleBatchInput {
  ids: bigint[];
  batchSize: number;
  force: boolean;
  privateKeyEnv: string;
  key: PrivateKey;
  /** The settler's fees: each escrow's pre-check takes one (settle-fee.ts). */
  fees: SettleFeeBudget;
}

/** Pool statuses of an escrow that is used up (upkeep/depletion-check.ts). */
const USED_UP = new Set(['depleted', 'nonce_limited']);

/**
 * The unsettled escrows a filter selects, by id: `model` narrows; `inactive` (the local routing
 * flag off) and `depleted` (pool status depleted or nonce_limited) each select, either one enough.
 */
export async function selectEscrows(ctx: ControllerContext, filter: SettleFilter): Promise<bigint[]> {
  const rows = await escrowTable.listUnsettled(
    ctx.sql,
    filter.model === undefined ? {} : { modelId: filter.model },
  );
  const byStatus = filter.inactive === true || filter.depleted === true;
  const statuses = filter.depleted
    ? await Promise.all(rows.map((r) => ctx.redis.hget(ctx.keys.poolEscrow(r.escrowId), 'status')))
    : [];
  return rows
    .filter(
      (r, i) =>
        !byStatus ||
        (filter.inactive === true && !r.active) ||
        (filter.depleted === true && USED_UP.has(statuses[i] ?? '')),
    )
    .map((r) => r.escrowId);
}

/** The settle job's failure reason (escrow/settle.ts, finalize.ts) as a batch error code. */
export function settleFailureCode(reason: string): SettleErrorCode {
  if (/^insufficient_funds\b/.test(reason)) return 'insufficient_funds';
  if (/settle rule 9|can no longer be settled/.test(reason)) return 'window_closed';
  if (/the settler must be the creator|^private_key_env/.test(reason)) return 'wrong_key';
  if (/is draining: its owner still holds it|completion_pending|taken by another process/.test(reason))
    return 'busy';
  if (/^settle tx \S+ failed/.test(reason)) return 'broadcast_failed';
  if (/outcome unknown|chain unreachable/.test(reason)) return 'outcome_unknown';
  if (/is not registered|does not exist on chain/.test(reason)) return 'not_found';
  return 'settle_failed';
}

const fail = (id: bigint, code: SettleErrorCode, message: string): SettleLine => ({
  escrow_id: id.toString(),
  ok: false,
  error: { code, message },
});

export async function runSettleBatch(
  ctx: ControllerContext,
  jobs: ControllerJobs,
  input: SettleBatchInput,
  emit: (line: SettleLine) => void,
  stop?: AbortSignal,
): Promise<SettleSummary> {
  const summary: SettleSummary = {
    total: input.ids.length,
    settled: 0,
    already_settled: 0,
    failed: 0,
    codes: {},
  };
  const report = (line: SettleLine) => {
    if (line.ok) summary.settled++;
    else {
      if (line.error.code === 'already_settled') summary.already_settled++;
      else summary.failed++;
      summary.codes[line.error.code] = (summary.codes[line.error.code] ?? 0) + 1;
    }
    emit(line);
  };
  const queue = [...input.ids];
  const worker = async () => {
    for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
      let line: SettleLine;
      try {
        line = stop?.aborted
          ? fail(id, 'shutting_down', 'the controller is shutting down; run the batch again')
          : await settleOne(ctx, jobs, input, id, stop);
      } catch (err) {
        line = fail(id, 'settle_failed', (err as Error).message);
      }
      report(line);
    }
  };
  await Promise.all(Array.from({ length: Math.min(input.batchSize, input.ids.length) }, worker));
  return summary;
}

async function settleOne(
  ctx: ControllerContext,
  jobs: ControllerJobs,
  input: SettleBatchInput,
  id: bigint,
  stop: AbortSignal | undefined,
): Promise<SettleLine> {
  const row = await escrowTable.findEscrow(ctx.sql, id);
  if (!row) return fail(id, 'not_found', `escrow ${id} is not registered`);
  if (row.state === 'settled') {
    const tx = await settleTxHash(ctx, id);
    return fail(id, 'already_settled', `escrow ${id} is settled${tx ? ` (tx ${tx})` : ''}`);
  }
  if (input.key.address !== row.creator) {
    return fail(
      id,
      'wrong_key',
      `private_key_env ${input.privateKeyEnv} holds ${input.key.address}, but escrow ${id} was created by ${row.creator} (the settler must be the creator)`,
    );
  }
  if (!input.force) {
    const inFlight = await inFlightCount(ctx, id);
    if (inFlight > 0)
      return fail(id, 'busy', `escrow ${id} has ${inFlight} request(s) in flight; retry later or use force`);
    // A held escrow (upkeep/escrow-hold.ts) may come back: settling it is the operator's explicit call.
    if ((await ctx.redis.hget(ctx.keys.poolEscrow(id), 'status')) === 'held')
      return fail(id, 'busy', `escrow ${id} is held by the balance check; retry later or use force`);
  }
  const short = input.fees.take();
  if (short) return fail(id, 'insufficient_funds', describeShortfall(short));

  const end = await jobs.runSettle(id, input.privateKeyEnv, {
    force: input.force,
    now: true,
    ...(stop ? { stop } : {}),
  });
  if (!end)
    return fail(id, 'shutting_down', `the settle job of escrow ${id} was left running; run the batch again`);
  if (end.kind === 'failed') {
    const code = settleFailureCode(end.reason);
    const more = end.retrying
      ? ' (the settle job retries it in the background; run the batch again to see its end)'
      : '';
    return fail(id, code, `${end.reason}${more}`);
  }
  const txHash = end.txHash ?? (await settleTxHash(ctx, id));
  return {
    escrow_id: id.toString(),
    ok: true,
    tx_hash: txHash,
    refund: txHash ? await refundOf(ctx, txHash) : null,
  };
}

/** The included settle tx the controller committed for the escrow, if any. */
async function settleTxHash(ctx: ControllerContext, id: bigint): Promise<string | null> {
  const [row] = await ctx.sql<{ tx_hash: string }[]>`
    select tx_hash from chain_tx_commitments
     where kind = 'settle_escrow' and escrow_id = ${id.toString()}::numeric and status = 'included'
     order by created_at desc limit 1`;
  return row?.tx_hash ?? null;
}

/** What the settle returned to the creator (its `remainder`), read from the tx's settle event. */
async function refundOf(ctx: ControllerContext, txHash: string): Promise<string | null> {
  const found = await lookupTx(ctx.chain, txHash).catch(() => undefined);
  if (found?.kind !== 'found' || found.outcome.status !== 'included') return null;
  const [event] = findEscrowSettledEvents(found.outcome.events);
  return event ? event.remainder.toString() : null;
}
