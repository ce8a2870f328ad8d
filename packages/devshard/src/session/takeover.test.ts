import { describe, expect, it } from 'vitest';
import { dedupKeys } from '../state/candidates.js';
import { InferenceStatus } from '../state/types.js';
import { ESCROW_ID, request, setup } from '../testing/session-setup.js';
import { wrapStore } from '../testing/wrap-store.js';

describe('takeover reads the executors’ mempools (architecture §2.5)', () => {
  /** Owner A serves one inference but its pending-tx saves never reach the store, then A is gone. */
  async function lostFinish() {
    const t = setup();
    await t.init();
    const losing = wrapStore(t.store, {
      saveWrites: async () => {
        throw new Error('connection lost');
      },
    });
    const a = await t.open({ store: losing });
    const r = await a.infer(request());
    expect(r).toMatchObject({ confirmed: true, finished: true }); // in A's memory only
    expect((await t.store.load(ESCROW_ID))!.pendingTxs).toEqual([]);
    return { t, r };
  }

  it('queues the Confirm and Finish the old owner had received, so the inference is billed at its real cost', async () => {
    const { t, r } = await lostFinish();
    const b = await t.open();
    await b.recoverFromMempools();
    expect(b.pendingTxCount).toBe(2);
    await b.flush();
    const record = b.state.inferences.get(r.nonce)!;
    expect(record.status).toBe(InferenceStatus.Finished);
    // 30 input + 20 output tokens at price 10, not the (30 + 100) × 10 reservation.
    expect(b.state.hostStats[r.executorSlot]!.cost).toBe((30n + 20n) * 10n);
  });

  it('open starts the mempool reads itself; drain waits for them', async () => {
    const { t, r } = await lostFinish();
    const b = await t.open();
    await b.drain();
    expect(b.pendingTxCount).toBe(2);
    const stored = (await t.store.load(ESCROW_ID))!.pendingTxs.map((p) => p.key).sort();
    expect(stored).toEqual([dedupKeys.confirm(r.nonce), dedupKeys.finish(r.nonce)]);
  });
});
