// Settlement of one escrow (spec §3.1 "finalized → settled"; chain-and-network.md §2.6 Settle):
// finalize first if needed, then MsgSettleDevshardEscrow built from the stored finalize document and
// signed by the key named by private_key_env (settler must be the creator, rule 1). The tx hash and
// bytes are committed before broadcast (state `settling`; chain/committed-tx.ts); a retry
// reconciles that hash first and only ever re-sends the same bytes. An escrow the chain already
// reports settled is done, not an error. Rule violations (wrong key, a refused tx) are
// `UnrecoverableError`s: retrying blindly cannot fix them. The settle job runs as a BullMQ flow
// (jobs/workers.ts): its finalize child (finalizeForSettle) first, then settleEscrow, which finds
// the document stored; both under the escrow's settle lock. Before finalizing, the settler must be
// able to pay the settle tx fee (settle-fee.ts): a refusal starting `insufficient_funds:` leaves the
// escrow serving. `force` cuts in-flight requests instead of waiting for them (finalize.ts).
import {
  ChainError,
  type PrivateKey,
  privateKeyFromEnv,
  queryChainId,
  queryEscrow,
  queryInferenceParams,
  queryLatestEpoch,
  type TxOutcome,
} from '@gonka-gateway/chain';
import { parseFinalizeDocument, settlementMessage } from '@gonka-gateway/devshard';
import { escrowTable } from '@gonka-gateway/shared';
import { UnrecoverableError } from 'bullmq';
import { liveCommitment, withBusinessLock } from '../chain/commitments.js';
import { runCommittedTx } from '../chain/committed-tx.js';
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
  options: {
    force?: boolean;
    /** The flow's finalize child already counted and logged a late window (finalizeForSettle). */
    windowReported?: boolean;
  } = {},
): Promise<SettleResult> {
  return runCommittedTx<SettleResult>(ctx, {
    kind: 'settle_escrow',
    businessKey: settleBusinessKey(escrowId),
    escrowId,
    begin: async () => {
      const row = await escrowTable.findEscrow(ctx.sql, escrowId);
      if (!row) throw new UnrecoverableError(`escrow ${escrowId} is not registered`);
      if (row.state === 'settled') return { done: { status: 'settled', txHash: null } };
      await watchWindow(ctx, escrowId, row.epochIndex, { report: options.windowReported !== true });
      return undefined;
    },
    prepare: async () => {
      const chainRow = (await queryEscrow(ctx.chain, escrowId)).escrow;
      if (!chainRow) throw new UnrecoverableError(`escrow ${escrowId} does not exist on chain`);
      if (chainRow.settled) return { done: await markSettled(ctx, escrowId, null) };

      const key = await settlerFor(ctx, escrowId, privateKeyEnv, chainRow.creator);
      const json = await finalizeEscrow(ctx, escrowId, { force: options.force === true });
      const fin = parseFinalizeDocument(json);
      const [chainId, params] = await Promise.all([queryChainId(ctx.chain), queryInferenceParams(ctx.chain)]);
      const signer = await ctx.signerFor(key, chainId);
      const { settler: _settler, ...message } = settlementMessage(fin.payload, fin.signatures, key.address);
      return { tx: signer.prepareSettleEscrow(message, params.fee) };
    },
    // State `settling` only once the tx that settles it is committed.
    onRecorded: async () => {
      await transition(ctx.sql, escrowId, 'settle');
    },
    onIncluded: (txHash) => markSettled(ctx, escrowId, txHash),
    onFailed: (outcome) => afterFailure(ctx, escrowId, outcome),
    onUnknown: async (outcome) => {
      // The job's retry reconciles this hash before anything else is sent.
      throw new Error(
        `settle tx ${outcome.txHash} of escrow ${escrowId}: outcome unknown (${outcome.reason})`,
      );
    },
    onUnreachable: async (_txHash, reason) => {
      throw new Error(`settle ${escrowId}: chain unreachable (${reason})`);
    },
  });
}

/**
 * The settle flow's first job (jobs/workers.ts: the finalize child of the escrow's settle job):
 * what settleEscrow checks before it finalizes — registered, window, settler is the creator and can
 * pay the fee (else the escrow keeps serving) — then the finalize itself. Nothing is left to do once
 * the escrow is settled or its settle tx is committed (the finalize document exists then); the
 * settle job that follows sees that and goes on from there. Idempotent: a finalized escrow's
 * stored document is returned as it is (finalize.ts).
 */
export async function finalizeForSettle(
  ctx: ControllerContext,
  escrowId: bigint,
  privateKeyEnv: string,
  options: { force?: boolean } = {},
): Promise<{ status: 'finalized' | 'settled' | 'committed' }> {
  return withBusinessLock(ctx.sql, settleBusinessKey(escrowId), async () => {
    const row = await escrowTable.findEscrow(ctx.sql, escrowId);
    if (!row) throw new UnrecoverableError(`escrow ${escrowId} is not registered`);
    if (row.state === 'settled') return { status: 'settled' };
    await watchWindow(ctx, escrowId, row.epochIndex, { report: true });
    if (await liveCommitment(ctx.sql, settleBusinessKey(escrowId))) return { status: 'committed' };
    const chainRow = (await queryEscrow(ctx.chain, escrowId)).escrow;
    if (!chainRow) throw new UnrecoverableError(`escrow ${escrowId} does not exist on chain`);
    if (chainRow.settled) return { status: 'settled' };
    await settlerFor(ctx, escrowId, privateKeyEnv, chainRow.creator);
    await finalizeEscrow(ctx, escrowId, { force: options.force === true });
    return { status: 'finalized' };
  });
}

/**
 * The settler's key, checked before anything is finalized or signed: it must be the creator's
 * (settle rule 1) and able to pay the settle tx fee (settle-fee.ts). Both refusals are final.
 */
async function settlerFor(
  ctx: ControllerContext,
  escrowId: bigint,
  privateKeyEnv: string,
  creator: string,
): Promise<PrivateKey> {
  let key: PrivateKey;
  try {
    key = privateKeyFromEnv(ctx.env, privateKeyEnv);
  } catch (err) {
    throw new UnrecoverableError(
      `private_key_env: ${err instanceof ChainError ? (err.detail ?? err.message) : 'unusable'}`,
    );
  }
  if (key.address !== creator) {
    throw new UnrecoverableError(
      `private_key_env ${privateKeyEnv} holds ${key.address}, but escrow ${escrowId} was created by ${creator} (the settler must be the creator)`,
    );
  }
  const short = await settleFeeShortfall(ctx, key.address);
  if (short) throw new UnrecoverableError(`insufficient_funds: ${describeShortfall(short)}`);
  return key;
}

/**
 * Logs and counts a late settle (once per settle: `report` is off where the flow's child did it);
 * a closed window is final (the chain refuses, rule 9).
 */
async function watchWindow(
  ctx: ControllerContext,
  escrowId: bigint,
  escrowEpoch: bigint,
  options: { report: boolean },
): Promise<void> {
  const [latest, params] = await Promise.all([queryLatestEpoch(ctx.chain), queryInferenceParams(ctx.chain)]);
  const window = settleWindowOf(latest, params.epoch.epochLength, escrowEpoch);
  const fields = {
    escrowId: escrowId.toString(),
    escrowEpoch: escrowEpoch.toString(),
    chainEpoch: window.currentEpoch.toString(),
    blocksLeft: window.blocksLeft.toString(),
  };
  if (window.stage === 'half_passed' && options.report) {
    ctx.metrics?.settleWindow.inc({ stage: 'half_passed' });
    ctx.logger.warn(
      { marker: 'escrow_settle_window_half_passed', ...fields },
      'settlement: over half of the settle window has passed',
    );
  } else if (window.stage === 'closing' && options.report) {
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

async function markSettled(
  ctx: ControllerContext,
  escrowId: bigint,
  txHash: string | null,
): Promise<SettleResult> {
  await transition(ctx.sql, escrowId, 'settled');
  const row = await escrowTable.setLastError(ctx.sql, escrowId, null);
  // A settled escrow never routes again: its pool entry goes (and the change is announced).
  if (row) await removeFromPool(ctx, escrowId, row.modelId);
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
  await escrowTable.setLastError(ctx.sql, escrowId, why);
  throw new UnrecoverableError(why);
}
