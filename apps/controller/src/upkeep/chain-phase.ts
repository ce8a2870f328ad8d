// Where the chain is in its epoch (chain-and-network.md §3.3): the public
// node's /v1/epochs/latest reduced to what rotation (spec §3.4) and the proxies' PoC gate need —
// the effective epoch, the phase, whether PoC is active, and how far the next epoch switch is and
// which epoch it leads into. The chain-phase job publishes it to Redis (a hash the proxies can read,
// plus an announcement on the channel when the epoch or phase changes); the rotation tick reads it
// fresh from the node every time, so a stale Redis copy never drives a create.
//
// While the node cannot answer, the chain-phase job publishes the LAST KNOWN epoch and phase instead
// (kept in Postgres, last_known_reads `chain_phase`, so a restarted controller has it too), marked
// `stale` with the time it was read: the proxies' PoC gate (DEVSHARD_POC_REQUEST_MODE=off) keeps the
// last known value for as long as the node is down (docs/operator-guide.md "When the public node is
// down"); rotation never acts on it.
import {
  blocksUntilEpochSwitch,
  effectiveEpochIndex,
  isPocActive,
  type LatestEpoch,
  queryLatestEpoch,
} from '@gonka-gateway/chain';
import { loadLastKnown, noteStoredCopy, saveLastKnown } from '../chain/last-known.js';
import type { ControllerContext } from '../controller-context.js';

export interface ChainPhase {
  blockHeight: bigint;
  /** The epoch whose validator set is in force (escrow epoch_index). */
  epoch: bigint;
  /** `latest_epoch.index`: moves up when PoC starts, before the switch. */
  latestEpoch: bigint;
  phase: string;
  pocActive: boolean;
  /** Blocks to the upcoming set_new_validators boundary (spec §2.5 `pre_poc_blocks` is measured to it). */
  blocksToSwitch: bigint;
  /** The epoch that boundary leads into; equal to `epoch` once the switch has happened. */
  switchEpoch: bigint;
}

/** The epoch the next switch leads into (the stages whose set_new_validators is the switch height). */
function switchEpochOf(e: LatestEpoch, effective: bigint): bigint {
  const cur = e.epochStages;
  if (cur && cur.setNewValidators >= e.blockHeight) return cur.epochIndex;
  if (e.nextEpochStages && e.nextEpochStages.setNewValidators > 0n) return e.nextEpochStages.epochIndex;
  return effective + 1n;
}

export function chainPhaseOf(e: LatestEpoch): ChainPhase {
  const epoch = effectiveEpochIndex(e);
  return {
    blockHeight: e.blockHeight,
    epoch,
    latestEpoch: e.epochIndex,
    phase: e.phase,
    pocActive: isPocActive(e),
    blocksToSwitch: blocksUntilEpochSwitch(e),
    switchEpoch: switchEpochOf(e, epoch),
  };
}

export async function readChainPhase(ctx: ControllerContext): Promise<ChainPhase> {
  return chainPhaseOf(await queryLatestEpoch(ctx.chain));
}

/** A copy older than this is not trusted by readers (three missed polls at the default period). */
export const CHAIN_PHASE_TTL_MS = 20_000;

/**
 * Writes the phase to Redis (hash with a TTL, so a dead controller's copy disappears) and announces
 * a changed epoch or phase on the channel. Returns what it wrote.
 */
export async function publishChainPhase(ctx: ControllerContext): Promise<ChainPhase> {
  const p = await readChainPhase(ctx);
  const key = ctx.keys.chainPhase;
  // Written only when the epoch or phase moved (saveLastKnown skips an unchanged body).
  await saveLastKnown(ctx.sql, 'chain_phase', lastKnownBody(p)).catch((err: Error) =>
    ctx.logger.warn({ err: err.message }, 'storing the last known chain phase failed'),
  );
  const before = await ctx.redis.hmget(key, 'epoch', 'phase');
  await ctx.redis
    .multi()
    .hset(key, {
      block_height: p.blockHeight.toString(),
      epoch: p.epoch.toString(),
      latest_epoch: p.latestEpoch.toString(),
      phase: p.phase,
      poc_active: p.pocActive ? '1' : '0',
      blocks_to_epoch_switch: p.blocksToSwitch.toString(),
      switch_epoch: p.switchEpoch.toString(),
      updated_at_ms: String(Date.now()),
    })
    .hdel(key, 'stale', 'read_at_ms')
    .pexpire(key, CHAIN_PHASE_TTL_MS)
    .exec();
  if (before[0] !== p.epoch.toString() || before[1] !== p.phase) {
    await ctx.redis.publish(ctx.keys.chainPhaseChanges, `${p.epoch}/${p.phase}`);
  }
  return p;
}

/** What is kept of a reading for when the node is down: the parts that change at phase boundaries only. */
interface LastKnownPhase {
  epoch: string;
  latest_epoch: string;
  phase: string;
  poc_active: boolean;
  switch_epoch: string;
}

function lastKnownBody(p: ChainPhase): LastKnownPhase {
  return {
    epoch: p.epoch.toString(),
    latest_epoch: p.latestEpoch.toString(),
    phase: p.phase,
    poc_active: p.pocActive,
    switch_epoch: p.switchEpoch.toString(),
  };
}

export interface StalePhase {
  readAt: Date;
  pocActive: boolean;
}

/**
 * While the node cannot answer (`err`): the last known phase republished with `stale = 1` and
 * `read_at_ms` (the proxies read `poc_active` from it; the TTL keeps a dead controller's copy from
 * lingering). `logMarker`: log `node_unreachable_stored_copy` (once per outage); it is counted every
 * time. Throws `err` when nothing was ever read.
 */
export async function republishLastKnownPhase(
  ctx: ControllerContext,
  err: unknown,
  logMarker: boolean,
): Promise<StalePhase> {
  const copy = await loadLastKnown(ctx.sql, 'chain_phase');
  if (!copy) throw err;
  const body = copy.body as LastKnownPhase;
  await ctx.redis
    .multi()
    .hset(ctx.keys.chainPhase, {
      epoch: body.epoch,
      latest_epoch: body.latest_epoch,
      phase: body.phase,
      poc_active: body.poc_active ? '1' : '0',
      switch_epoch: body.switch_epoch,
      stale: '1',
      read_at_ms: String(copy.readAt.getTime()),
      updated_at_ms: String(Date.now()),
    })
    .pexpire(ctx.keys.chainPhase, CHAIN_PHASE_TTL_MS)
    .exec();
  const fields = { readAt: copy.readAt.toISOString(), pocActive: body.poc_active };
  if (logMarker) noteStoredCopy(ctx, 'chain_phase', fields, err);
  else ctx.metrics?.storedCopies.inc({ what: 'chain_phase' });
  return { readAt: copy.readAt, pocActive: body.poc_active };
}
