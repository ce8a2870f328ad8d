// Settlement of one escrow (spec §3.1 "finalized → settled"; chain-and-network.md §2.6 Settle):
// finalize first if needed, then MsgSettleDevshardEscrow built from the stored finalize document and
// signed by the key named by private_key_env (settler must be the creator, rule 1). The tx hash and
// bytes are committed before broadcast (state `settling`); a retry reconciles that hash first and
// only ever re-sends the same bytes. An escrow the chain already reports settled is done, not an
// error. Rule violations (wrong key, a refused tx) are `UnrecoverableError`s: retrying blindly
// cannot fix them. Runs inside the settle job (jobs/workers.ts), under a per-escrow lock.
// Before finalizing, the settler must be able to pay the settle tx fee (settle-fee.ts): a refusal
// starting `insufficient_funds:` leaves the escrow serving. `force` cuts in-flight requests instead
// of waiting for them (finalize.ts).
import {
  broadcastAndWait,
  ChainError,
  privateKeyFromEnv,
  queryChainId,
  queryEscrow,
  queryInferenceParams,
  queryLatestEpoch,
  type TxOutcome,
} from '@gonka-gateway/chain';
import { parseFinalizeDocument, settlementMessage } from '@gonka-gateway/devshard';
import { UnrecoverableError } from 'bullmq';
import {
  liveCommitment,
  markBroadcast,
  reconcileCommitment,
  recordCommitment,
  recordOutcome,
  withBusinessLock,
} from '../chain/commitments.js';
import type { ControllerContext } from '../controller-context.js';
import { finalizeEscrow } from './finalize.js';
import { removeFromPool } from './pool-status.js';
import { describeShortfall, settleFeeShortfall } from './settle-fee.js';
import { settleWindowOf } from './settle-window.js';
import { transition } from './transitions.js';

export type SettleResult = { status: 'settled'; txHash: string | null };

export const settleBusinessKey = (escrowId: bigint) => `settle_escrow:${escrowId}`;

export async function settleEscrow(
  ctx: ControllerContext,
  escrowId: bigint,
  privateKeyEnv: string,
  options: { force?: boolean } = {},
): Promise<SettleResult> {
  return withBusinessLock(ctx.sql, settleBusinessKey(escrowId), async () => {
    const [row] = await ctx.sql<{ state: string; epoch_index: string }[]>`
      select state, epoch_index::text as epoch_index from escrows where escrow_id = ${escrowId.toString()}::numeric`;
    if (!row) throw new UnrecoverableError(`escrow ${escrowId} is not registered`);
    if (row.state === 'settled') return { status: 'settled', txHash: null };
    await watchWindow(ctx, escrowId, BigInt(row.epoch_index));

    const live = await liveCommitment(ctx.sql, settleBusinessKey(escrowId));
    if (live) {
      const reconciled =
        live.status === 'included'
          ? { kind: 'included' as const }
          : await reconcileCommitment(ctx.sql, ctx.chain, live);
      ctx.logger.info(
        { escrowId: escrowId.toString(), txHash: live.txHash, reconciled: reconciled.kind },
        'settle: reconciled commitment',
      );
      if (reconciled.kind === 'included') return markSettled(ctx, escrowId, live.txHash);
      if (reconciled.kind === 'failed') return afterFailure(ctx, escrowId, reconciled.outcome);
      if (reconciled.kind === 'unreachable')
        throw new Error(`settle ${escrowId}: chain unreachable (${reconciled.reason})`);
      if (reconciled.kind === 'pending') return send(ctx, escrowId, live.txHash, live.txBytes);
      // expired: it can never land; a new tx is safe below.
    }

    const chainRow = (await queryEscrow(ctx.chain, escrowId)).escrow;
    if (!chainRow) throw new UnrecoverableError(`escrow ${escrowId} does not exist on chain`);
    if (chainRow.settled) return markSettled(ctx, escrowId, null);

    let key: ReturnType<typeof privateKeyFromEnv>;
    try {
      key = privateKeyFromEnv(ctx.env, privateKeyEnv);
    } catch (err) {
      throw new UnrecoverableError(
        `private_key_env: ${err instanceof ChainError ? (err.detail ?? err.message) : 'unusable'}`,
      );
    }
    if (key.address !== chainRow.creator) {
      throw new UnrecoverableError(
        `private_key_env ${privateKeyEnv} holds ${key.address}, but escrow ${escrowId} was created by ${chainRow.creator} (the settler must be the creator)`,
      );
    }
    const short = await settleFeeShortfall(ctx, key.address);
    if (short) throw new UnrecoverableError(`insufficient_funds: ${describeShortfall(short)}`);
    const json = await finalizeEscrow(ctx, escrowId, { force: options.force === true });
    const fin = parseFinalizeDocument(json);
    const [chainId, params] = await Promise.all([queryChainId(ctx.chain), queryInferenceParams(ctx.chain)]);
    const signer = await ctx.signerFor(key, chainId);
    const { settler: _settler, ...message } = settlementMessage(fin.payload, fin.signatures, key.address);
    const tx = signer.prepareSettleEscrow(message, params.fee);
    await recordCommitment(ctx.sql, {
      kind: 'settle_escrow',
      businessKey: settleBusinessKey(escrowId),
      escrowId,
      tx,
    });
    await transition(ctx.sql, escrowId, 'settle');
    return send(ctx, escrowId, tx.txHash, tx.txBytes, tx.timeoutTimestampNs);
  });
}

/** Logs and counts a late settle; a closed window is final (the chain refuses, rule 9). */
async function watchWindow(ctx: ControllerContext, escrowId: bigint, escrowEpoch: bigint): Promise<void> {
  const [latest, params] = await Promise.all([queryLatestEpoch(ctx.chain), queryInferenceParams(ctx.chain)]);
  const window = settleWindowOf(latest, params.epoch.epochLength, escrowEpoch);
  const fields = {
    escrowId: escrowId.toString(),
    escrowEpoch: escrowEpoch.toString(),
    chainEpoch: window.currentEpoch.toString(),
    blocksLeft: window.blocksLeft.toString(),
  };
  if (window.stage === 'half_passed') {
    ctx.metrics?.settleWindow.inc({ stage: 'half_passed' });
    ctx.logger.warn(
      { marker: 'escrow_settle_window_half_passed', ...fields },
      'settlement: over half of the settle window has passed',
    );
  } else if (window.stage === 'closing') {
    ctx.metrics?.settleWindow.inc({ stage: 'closing' });
    ctx.logger.error(
      { marker: 'escrow_settle_window_closing', ...fields },
      'settlement: the settle window is about to close',
    );
  } else if (window.stage === 'closed') {
    // A tx still unknown may have landed in time: the reconciliation below is by hash and still runs.
    const live = await liveCommitment(ctx.sql, settleBusinessKey(escrowId));
    const settledElsewhere = (await queryEscrow(ctx.chain, escrowId)).escrow?.settled === true;
    if (!live && !settledElsewhere) {
      ctx.logger.error(
        { marker: 'escrow_settle_window_closed', ...fields },
        'settlement: the settle window has closed',
      );
      throw new UnrecoverableError(
        `escrow ${escrowId} (epoch ${escrowEpoch}) can no longer be settled: the chain is in epoch ${window.currentEpoch} (settle rule 9)`,
      );
    }
  }
}

async function send(
  ctx: ControllerContext,
  escrowId: bigint,
  txHash: string,
  txBytes: Uint8Array,
  timeoutTimestampNs?: bigint,
): Promise<SettleResult> {
  await markBroadcast(ctx.sql, txHash);
  const outcome = await broadcastAndWait(
    ctx.chain,
    { txHash, txBytes, ...(timeoutTimestampNs === undefined ? {} : { timeoutTimestampNs }) },
    ctx.poll,
  );
  await recordOutcome(ctx.sql, outcome, { escrowId });
  if (outcome.status === 'included') return markSettled(ctx, escrowId, outcome.txHash);
  if (outcome.status === 'failed') return afterFailure(ctx, escrowId, outcome);
  // Unknown: the job's retry reconciles this hash before anything else is sent.
  throw new Error(`settle tx ${outcome.txHash} of escrow ${escrowId}: outcome unknown (${outcome.reason})`);
}

async function markSettled(
  ctx: ControllerContext,
  escrowId: bigint,
  txHash: string | null,
): Promise<SettleResult> {
  await transition(ctx.sql, escrowId, 'settled');
  const [row] = await ctx.sql<{ model_id: string }[]>`
    update escrows set last_error = null, updated_at = now() where escrow_id = ${escrowId.toString()}::numeric
    returning model_id`;
  // A settled escrow never routes again: its pool entry goes (and the change is announced).
  if (row) await removeFromPool(ctx, escrowId, row.model_id);
  ctx.logger.info({ escrowId: escrowId.toString(), txHash }, 'escrow settled');
  return { status: 'settled', txHash };
}

async function afterFailure(
  ctx: ControllerContext,
  escrowId: bigint,
  outcome: TxOutcome,
): Promise<SettleResult> {
  // Settled by someone else in the meantime (a race with the CLI): done, not an error.
  const chainRow = (await queryEscrow(ctx.chain, escrowId)).escrow;
  if (chainRow?.settled) return markSettled(ctx, escrowId, null);
  const why =
    outcome.status === 'failed'
      ? `settle tx ${outcome.txHash} failed (${outcome.stage}, code ${outcome.code} ${outcome.codespace}): ${outcome.rawLog}`
      : `settle tx ${outcome.txHash} failed`;
  await transition(ctx.sql, escrowId, 'settleFailed');
  await ctx.sql`update escrows set last_error = ${why}, updated_at = now() where escrow_id = ${escrowId.toString()}::numeric`;
  throw new UnrecoverableError(why);
}
