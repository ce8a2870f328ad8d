// Stage decisions over the epoch schedule of chain-and-network.md §3.3 (epoch 7: PoC from 1400,
// set_new_validators at 1420, next PoC at 1600; pre_poc_blocks 100), from node-shaped JSON.
import { parseLatestEpoch } from '@gonka-gateway/chain';
import { describe, expect, it } from 'vitest';
import { chainPhaseOf } from './chain-phase.js';
import { blocksUntilBridge, planRotation } from './rotation-plan.js';

const stages = (epoch: number) => ({
  epoch_index: epoch,
  set_new_validators: epoch * 200 + 20,
  next_poc_start: (epoch + 1) * 200,
});
/** The node's /v1/epochs/latest at `height` for a 200-block epoch whose PoC takes its first 20 blocks. */
function latest(height: number, extra: Record<string, unknown> = {}) {
  const latestEpoch = Math.floor(height / 200);
  const inPoc = height % 200 < 20;
  return chainPhaseOf(
    parseLatestEpoch({
      block_height: height,
      phase: inPoc ? 'PoCGenerate' : 'Inference',
      latest_epoch: { index: latestEpoch, poc_start_block_height: latestEpoch * 200 },
      epoch_stages: stages(latestEpoch),
      next_epoch_stages: stages(latestEpoch + 1),
      is_confirmation_poc_active: false,
      ...extra,
    }),
  );
}
const PRE = 100n;

describe('planRotation', () => {
  it('target for the epoch in force while the switch is further than pre_poc_blocks', () => {
    const p = latest(1450);
    expect([p.epoch, p.blocksToSwitch, p.switchEpoch]).toEqual([7n, 170n, 8n]);
    expect(planRotation(p, PRE)).toEqual({ stage: 'target', epoch: 7n, role: 'regular' });
    expect(blocksUntilBridge(p, PRE)).toBe(70n);
  });

  it('bridge into the next epoch from pre_poc_blocks before the switch, through its PoC', () => {
    expect(planRotation(latest(1520), PRE)).toEqual({ stage: 'bridge', epoch: 8n, role: 'temp' });
    expect(planRotation(latest(1599), PRE)).toEqual({ stage: 'bridge', epoch: 8n, role: 'temp' });
    // PoC of epoch 8 has started: latest_epoch moved up, the set in force (7) has not.
    const inPoc = latest(1610);
    expect([inPoc.epoch, inPoc.latestEpoch, inPoc.pocActive]).toEqual([7n, 8n, true]);
    expect(planRotation(inPoc, PRE)).toEqual({ stage: 'bridge', epoch: 8n, role: 'temp' });
    expect(blocksUntilBridge(inPoc, PRE)).toBe(0n);
  });

  it('target of the new epoch once the switch has happened and PoC is over (not a bridge at the switch height)', () => {
    const atSwitch = latest(1620);
    expect([atSwitch.epoch, atSwitch.blocksToSwitch]).toEqual([8n, 0n]);
    expect(planRotation(atSwitch, PRE)).toEqual({ stage: 'target', epoch: 8n, role: 'regular' });
  });

  it('holds while a confirmation PoC runs outside the bridge window, and on stale node data', () => {
    const confirmation = latest(1450, {
      is_confirmation_poc_active: true,
      active_confirmation_poc_event: { phase: 2, trigger_height: 1440 },
    });
    expect(planRotation(confirmation, PRE)).toEqual({ stage: 'hold', reason: 'poc_active' });
    const stale = chainPhaseOf(
      parseLatestEpoch({
        block_height: 1700,
        phase: 'Inference',
        latest_epoch: { index: 7, poc_start_block_height: 1400 },
        epoch_stages: stages(7),
        is_confirmation_poc_active: false,
      }),
    );
    expect(stale.blocksToSwitch).toBeLessThan(0n);
    expect(planRotation(stale, PRE)).toEqual({ stage: 'hold', reason: 'stale_chain_data' });
  });
});
