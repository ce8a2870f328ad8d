// The retire-by height of an escrow (settle-window safety). The chain accepts a settle only while
// its epoch is the escrow's epoch or the next (chain-and-network.md §2.6 Settle rule 9), so the
// window closes at the switch into escrow epoch + 2. Retiring must start early enough that, in the
// worst case, everything after it still fits before that switch:
// - an inference confirmed just before the drain may stall: the finalize gate refuses to bill it
//   until its execution_timeout (frozen on the escrow row) plus the ~5 s clock-skew wait has passed
//   and the timeout vote ran (devshard-protocol.md §7.4, §8; session/finalize-gate.ts);
// - then the finalize rounds and the settle tx (GATEWAY_SETTLE_MARGIN_MS);
// - and the controller notices only on its next rotation tick (GATEWAY_ROTATION_TICK_MS).
// That reserve, in blocks at the controller's block time estimate (chain/block-time.ts), is taken
// off the close: retire_by = close − reserve. It is never earlier than the end of the escrow's own
// epoch (close − epoch_length): on a chain whose epochs are shorter than the reserve (a devnet with
// a 1,920 s execution_timeout and 50 s epochs) nothing could serve otherwise; such an escrow is
// retired at the first tick of the next epoch, and `capped` says the full reserve did not fit.
// Computed on every pass, never stored: a new block time estimate or epoch length applies at once.
import type { InferenceParams } from '@gonka-gateway/chain';
import { escrowTable } from '@gonka-gateway/shared';
import { type BlockTimeEstimate, readBlockTime } from '../chain/block-time.js';
import { inferenceParamsOrLastKnown } from '../chain/last-known.js';
import type { ControllerContext } from '../controller-context.js';
import { settleWindowAt } from '../escrow/settle-window.js';
import { ROTATION_TICK_EVERY_MS } from '../jobs/queues.js';
import type { ChainPhase } from './chain-phase.js';

/** devshard-protocol.md §7.4: past a deadline, wait ~5 s more for clock skew before the vote. */
export const TIMEOUT_SKEW_MS = 5_000;
/** GATEWAY_SETTLE_MARGIN_MS default: signature rounds (backoff capped at 30 s) and a tx poll (45 s), with room. */
export const DEFAULT_SETTLE_MARGIN_MS = 120_000;

export interface SettleTiming {
  tickMs: number;
  marginMs: number;
}

export function settleTimingOf(ctx: Pick<ControllerContext, 'settleTiming'>): SettleTiming {
  return ctx.settleTiming ?? { tickMs: ROTATION_TICK_EVERY_MS, marginMs: DEFAULT_SETTLE_MARGIN_MS };
}

export interface RetireBy {
  height: bigint;
  /** Blocks kept before the close: execution_timeout + skew + margin + one tick. */
  reserveBlocks: bigint;
  /** The reserve is longer than an epoch: retire_by is the end of the escrow's own epoch instead. */
  capped: boolean;
}

export function retireByHeight(input: {
  closesAt: bigint;
  epochLength: bigint;
  executionTimeoutS: bigint;
  msPerBlock: number;
  timing: SettleTiming;
}): RetireBy {
  const reserveMs =
    Number(input.executionTimeoutS) * 1_000 + TIMEOUT_SKEW_MS + input.timing.marginMs + input.timing.tickMs;
  const reserveBlocks = BigInt(Math.ceil(reserveMs / input.msPerBlock));
  const capped = reserveBlocks > input.epochLength;
  return {
    height: input.closesAt - (capped ? input.epochLength : reserveBlocks),
    reserveBlocks,
    capped,
  };
}

/** The first height at which the chain refuses the escrow's settle; null once that has passed. */
export function windowClosesAt(
  phase: Pick<ChainPhase, 'blockHeight' | 'epoch' | 'blocksToSwitch'>,
  epochLength: bigint,
  escrowEpoch: bigint,
): bigint | null {
  const w = settleWindowAt(phase.epoch, phase.blocksToSwitch, epochLength, escrowEpoch);
  return w.stage === 'closed' ? null : phase.blockHeight + w.blocksLeft;
}

export interface EscrowWindow {
  escrowId: bigint;
  modelId: string;
  role: string;
  state: string;
  amount: bigint;
  epoch: bigint;
  executionTimeoutS: bigint;
  /** null: the window has closed. */
  closesAt: bigint | null;
  /** null: the window has closed, or there is no block time estimate yet. */
  retireBy: RetireBy | null;
}

export interface SettleWindows {
  blockTime: BlockTimeEstimate | undefined;
  timing: SettleTiming;
  epochLength: bigint;
  /** Every escrow the gateway has not settled, by id. */
  escrows: EscrowWindow[];
}

/** Whether the escrow is due: its window closed, or the chain reached its retire-by height. */
export function pastRetireBy(e: EscrowWindow, height: bigint): boolean {
  return e.closesAt === null || (e.retireBy !== null && height >= e.retireBy.height);
}

/** The settle windows of every unsettled escrow at `phase` (chain params from their stored copy if need be). */
export async function readSettleWindows(ctx: ControllerContext, phase: ChainPhase): Promise<SettleWindows> {
  const [params, blockTime] = await Promise.all([inferenceParamsOrLastKnown(ctx), readBlockTime(ctx)]);
  return settleWindowsOf(phase, params, blockTime, settleTimingOf(ctx), await unsettledEscrows(ctx));
}

interface UnsettledRow {
  escrow_id: string;
  model_id: string;
  role: string;
  state: string;
  amount: string;
  epoch_index: string;
  execution_timeout: string | null;
}

async function unsettledEscrows(ctx: ControllerContext): Promise<UnsettledRow[]> {
  // execution_timeout as the chain row was frozen at registration; older rows lack it (zero).
  return (await escrowTable.listUnsettled(ctx.sql)).map((e) => ({
    escrow_id: e.escrowId.toString(),
    model_id: e.modelId,
    role: e.role,
    state: e.state,
    amount: e.amount.toString(),
    epoch_index: e.epochIndex.toString(),
    execution_timeout: e.executionTimeout,
  }));
}

export function settleWindowsOf(
  phase: ChainPhase,
  params: Pick<InferenceParams, 'epoch' | 'devshardEscrow'>,
  blockTime: BlockTimeEstimate | undefined,
  timing: SettleTiming,
  rows: readonly UnsettledRow[],
): SettleWindows {
  const epochLength = params.epoch.epochLength;
  const escrows = rows.map((r): EscrowWindow => {
    const epoch = BigInt(r.epoch_index);
    // A row without its own timeout runs on the params' (session-record.ts does the same).
    const own = /^\d+$/.test(r.execution_timeout ?? '') ? BigInt(r.execution_timeout!) : 0n;
    const executionTimeoutS = own > 0n ? own : params.devshardEscrow.executionTimeout;
    const closesAt = windowClosesAt(phase, epochLength, epoch);
    return {
      escrowId: BigInt(r.escrow_id),
      modelId: r.model_id,
      role: r.role,
      state: r.state,
      amount: BigInt(r.amount),
      epoch,
      executionTimeoutS,
      closesAt,
      retireBy:
        closesAt === null || !blockTime
          ? null
          : retireByHeight({
              closesAt,
              epochLength,
              executionTimeoutS,
              msPerBlock: blockTime.msPerBlock,
              timing,
            }),
    };
  });
  return { blockTime, timing, epochLength, escrows };
}
