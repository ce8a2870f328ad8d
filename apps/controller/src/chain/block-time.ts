// The controller's estimate of the chain's block time. The block time is a property of the chain
// (no param states it), so it is measured: the chain-phase job (jobs/workers.ts, every third of the
// rotation tick) samples the node's block height against the wall clock, and the estimate is the
// milliseconds per block between a reference sample and now. The reference moves up every half
// WINDOW_MS, so the estimate spans between half a window and a window and follows a chain whose
// pace changes. It lives in Redis (hash `chain:block-time`) so every controller reads the same one
// and a restart keeps it. Until MIN_BLOCKS and MIN_SPAN_MS have passed there is none: callers treat
// "unknown" as "do not act on it" (settle-window retire-by, the settings' bridge-window check).
import type { ControllerContext } from '../controller-context.js';

/** Below this many blocks one block of rounding moves the estimate by more than 5 %. */
export const MIN_BLOCKS = 20n;
/** Below this span the read latency of a poll weighs too much. */
export const MIN_SPAN_MS = 10_000;
/** The estimate spans at most this long (and at least half of it once the first window passed). */
export const WINDOW_MS = 10 * 60_000;

export interface BlockTimeEstimate {
  msPerBlock: number;
  /** Blocks and milliseconds the estimate was measured over. */
  overBlocks: number;
  overMs: number;
}

type Ctx = Pick<ControllerContext, 'redis' | 'keys'>;

/**
 * One sample: the node's block height now. Returns the estimate after it (undefined while too few
 * blocks or too little time passed since the reference, or after the height went down: a new chain).
 */
export async function sampleBlockTime(
  ctx: Ctx,
  height: bigint,
  nowMs = Date.now(),
): Promise<BlockTimeEstimate | undefined> {
  const key = ctx.keys.chainBlockTime;
  const f = await ctx.redis.hgetall(key);
  const ref = sampleOf(f.ref_height, f.ref_ms);
  const mid = sampleOf(f.mid_height, f.mid_ms);
  if (!ref || !mid || height < mid.height || nowMs < mid.ms) {
    // First sample, or the chain (or the clock) went back: start over.
    const start = { height: height.toString(), ms: String(nowMs) };
    await ctx.redis
      .multi()
      .del(key)
      .hset(key, { ref_height: start.height, ref_ms: start.ms, mid_height: start.height, mid_ms: start.ms })
      .exec();
    return undefined;
  }
  const fields: Record<string, string> = {};
  const blocks = height - ref.height;
  const span = nowMs - ref.ms;
  let estimate: BlockTimeEstimate | undefined;
  if (blocks >= MIN_BLOCKS && span >= MIN_SPAN_MS) {
    estimate = { msPerBlock: span / Number(blocks), overBlocks: Number(blocks), overMs: span };
    fields.ms_per_block = String(estimate.msPerBlock);
    fields.over_blocks = String(estimate.overBlocks);
    fields.over_ms = String(estimate.overMs);
  }
  if (nowMs - mid.ms >= WINDOW_MS / 2) {
    Object.assign(fields, {
      ref_height: mid.height.toString(),
      ref_ms: String(mid.ms),
      mid_height: height.toString(),
      mid_ms: String(nowMs),
    });
  }
  if (Object.keys(fields).length > 0) await ctx.redis.hset(key, fields);
  return estimate ?? (await readBlockTime(ctx));
}

/** The current estimate, or undefined when none was measured yet. */
export async function readBlockTime(ctx: Ctx): Promise<BlockTimeEstimate | undefined> {
  const [ms, blocks, span] = await ctx.redis.hmget(
    ctx.keys.chainBlockTime,
    'ms_per_block',
    'over_blocks',
    'over_ms',
  );
  const msPerBlock = Number(ms);
  if (ms === null || !Number.isFinite(msPerBlock) || msPerBlock <= 0) return undefined;
  return { msPerBlock, overBlocks: Number(blocks), overMs: Number(span) };
}

function sampleOf(height: string | undefined, ms: string | undefined) {
  if (height === undefined || ms === undefined || !/^\d+$/.test(height)) return undefined;
  const at = Number(ms);
  return Number.isFinite(at) ? { height: BigInt(height), ms: at } : undefined;
}
